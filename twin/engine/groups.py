"""Per-group reductions (GPUs by node, rack or CDU; nodes by rack) without Python loops.

A :class:`Groups` is built once per grouping.  When groups are contiguous and of equal
size, sums are a matrix-vector product with ones over the ``[groups, width]`` view and
maxima a ``reduceat`` (numpy's reduction along a short last axis is several times slower
than either); otherwise both use ``np.ufunc.reduceat`` on a precomputed order.
"""

from __future__ import annotations

import numpy as np


class Groups:
    """Sum/max of per-member values by group, via reduceat on a precomputed order."""

    def __init__(self, group: np.ndarray, n_groups: int) -> None:
        group = np.asarray(group, dtype=np.int64)
        self.group = group
        self.sorted = bool(np.all(np.diff(group) >= 0))
        self.order = None if self.sorted else np.argsort(group, kind="stable")
        g = group if self.sorted else group[self.order]
        counts = np.bincount(g, minlength=n_groups)
        self.counts = counts
        self.nonempty = np.flatnonzero(counts > 0)
        self.starts = np.concatenate(([0], np.cumsum(counts)[:-1]))[self.nonempty]
        self.n_groups = n_groups
        self.all_nonempty = self.nonempty.size == n_groups
        # equal-size contiguous groups → reshape (fastest)
        self.width = int(counts[0]) if (self.sorted and n_groups and np.all(counts == counts[0])) else 0
        self._ones = np.ones(self.width)

    def _reduce(self, values: np.ndarray, ufunc: np.ufunc, fill: float) -> np.ndarray:
        if self.width:
            if ufunc is np.add:
                return values.reshape(self.n_groups, self.width) @ self._ones
            return ufunc.reduceat(values, self.starts)
        v = values if self.order is None else values[self.order]
        if self.all_nonempty:
            return ufunc.reduceat(v, self.starts)
        out = np.full(self.n_groups, fill, dtype=np.float64)
        if self.nonempty.size:
            out[self.nonempty] = ufunc.reduceat(v, self.starts)
        return out

    def sum(self, values: np.ndarray) -> np.ndarray:
        return self._reduce(np.asarray(values, dtype=np.float64), np.add, 0.0)

    def expand(self, values: np.ndarray) -> np.ndarray:
        """Per-group values spread to the members (``values[group]``)."""
        if self.width:
            return np.repeat(values, self.width)
        if self.sorted:
            return np.repeat(values, self.counts)
        return values[self.group]

    def max(self, values: np.ndarray) -> np.ndarray:
        return self._reduce(np.asarray(values, dtype=np.float64), np.maximum, np.nan)
