"""Table orders that do not move under the cursor: by value, ties broken by name.

A tie between two rows (two CDUs at the same use, two elements at 0 %) must always
resolve the same way, or links swap places from one live update to the next.
"""

from __future__ import annotations

import numpy as np


def name_rank(names) -> np.ndarray:
    """Rank of each name in alphabetical order (0 = first)."""
    order = np.argsort(np.asarray(names, dtype=object), kind="stable")
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    return rank


def order_by(keys: list[np.ndarray], names, candidates: np.ndarray | None = None) -> np.ndarray:
    """Indices of ``candidates`` (all by default) sorted by ``keys`` (first key most significant,
    ascending), then by name.  NaN keys sort last; negate a key for a descending order."""
    rank = name_rank(names)
    idx = np.arange(rank.size) if candidates is None else np.asarray(candidates, dtype=np.int64)
    columns = [rank[idx]]
    for key in reversed(keys):
        values = np.asarray(key, dtype=np.float64)[idx]
        columns.append(np.where(np.isnan(values), np.inf, values))
    return idx[np.lexsort(columns)]
