"""Columnar telemetry frames: a whole site's readings at one instant, stored in blocks.

A 100k-GPU site at 1 Hz produces ~600,000 GPU values a second, so a row per sample
is out (CONVENTIONS habit 6).  A *frame* of one kind (``gpu``, ``cdu``, ``power``, …) is
a float32 array ``[n_fields, n_entities]``; it is cut into blocks of ``block_size``
consecutive entities and each block is one :class:`TelemetryChunk` row keyed by
(layout, block, ts_ms).  Writing a frame is one ``executemany``; reading a rack's GPUs
over a window touches only the chunks of the blocks holding those GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
from sqlalchemy import and_, insert, select
from sqlalchemy.engine import Engine
from sqlmodel import Session
from sqlmodel import select as orm_select

from ingest.store.models import TelemetryChunk, TelemetryLayout
from twin.quantities import quantity


class FrameError(ValueError):
    """A frame does not match its layout."""


@dataclass(frozen=True)
class FrameLayout:
    """The fields and block size of one kind of frame."""

    kind: str
    fields: tuple[str, ...]
    n_entities: int
    block_size: int

    def __post_init__(self) -> None:
        for name in self.fields:
            quantity(name)  # only canonical quantities are stored
        if self.n_entities <= 0 or self.block_size <= 0:
            raise FrameError(f"layout {self.kind!r}: n_entities and block_size must be positive")

    @property
    def n_blocks(self) -> int:
        return -(-self.n_entities // self.block_size)


def to_ms(ts: datetime) -> int:
    """Milliseconds since the epoch of an aware datetime."""
    if ts.tzinfo is None:
        raise FrameError(f"naive timestamp {ts!r}: frames need timezone-aware UTC")
    return int(round(ts.timestamp() * 1000))


def from_ms(ts_ms: np.ndarray) -> np.ndarray:
    """Epoch milliseconds → numpy datetime64[ms] (UTC)."""
    return np.asarray(ts_ms, dtype="int64").astype("datetime64[ms]")


class FrameStore:
    """Writes and reads the frames of one site."""

    def __init__(self, engine: Engine, site_name: str, layouts: list[FrameLayout]) -> None:
        self.engine, self.site_name = engine, site_name
        self.layouts = {lay.kind: lay for lay in layouts}
        self._layout_ids = self._register(layouts)

    def _register(self, layouts: list[FrameLayout]) -> dict[str, int]:
        ids = {}
        with Session(self.engine) as session:
            for lay in layouts:
                row = session.exec(
                    orm_select(TelemetryLayout).where(
                        TelemetryLayout.site_name == self.site_name, TelemetryLayout.kind == lay.kind
                    )
                ).first()
                fields_csv = ",".join(lay.fields)
                if row is None:
                    row = TelemetryLayout(
                        site_name=self.site_name,
                        kind=lay.kind,
                        fields_csv=fields_csv,
                        n_entities=lay.n_entities,
                        block_size=lay.block_size,
                    )
                    session.add(row)
                    session.commit()
                    session.refresh(row)
                elif (row.fields_csv, row.n_entities, row.block_size) != (fields_csv, lay.n_entities, lay.block_size):
                    raise FrameError(
                        f"site {self.site_name!r} already stores {lay.kind!r} frames as "
                        f"{row.n_entities} entities × [{row.fields_csv}] in blocks of {row.block_size}; "
                        f"refusing to mix in a different layout (use another database or site name)"
                    )
                ids[lay.kind] = row.id
        return ids

    def write_frame(self, ts: datetime, frames: dict[str, np.ndarray], shard: tuple[int, int] = (0, 1)) -> None:
        """Store ``frames`` (kind → float array [n_fields, n_entities]) at ``ts`` in one transaction.

        With ``shard=(i, n)`` only blocks ``b`` with ``b % n == i`` are written, so that n
        ingest processes can share the writing of one site's frames.
        """
        index, count = shard
        if not 0 <= index < count:
            raise FrameError(f"shard {index}/{count}: index must be in 0..{count - 1}")
        ts_ms = to_ms(ts)
        rows = []
        for kind, values in frames.items():
            lay = self.layouts.get(kind)
            if lay is None:
                raise FrameError(f"no layout for frame kind {kind!r} (known: {sorted(self.layouts)})")
            arr = np.asarray(values, dtype=np.float32)
            if arr.shape != (len(lay.fields), lay.n_entities):
                raise FrameError(
                    f"{kind!r} frame has shape {arr.shape}, layout wants ({len(lay.fields)}, {lay.n_entities})"
                )
            layout_id = self._layout_ids[kind]
            for block in range(index, lay.n_blocks, count):
                chunk = arr[:, block * lay.block_size : (block + 1) * lay.block_size]
                rows.append(
                    {
                        "layout_id": layout_id,
                        "block": block,
                        "ts_ms": ts_ms,
                        "data": np.ascontiguousarray(chunk).tobytes(),
                    }
                )
        with self.engine.begin() as conn:
            conn.execute(insert(TelemetryChunk), rows)

    def read_window(
        self, kind: str, entity_ids: np.ndarray, start: datetime, end: datetime, fields: tuple[str, ...] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Values of ``entity_ids`` between ``start`` and ``end`` (inclusive).

        Returns ``(ts, values)``: ``ts`` datetime64[ms] of shape [n_ts], ``values`` float32
        [n_ts, n_fields, n_ids] in the order of ``fields`` (default: all of the layout).
        Instants with a missing block read as NaN.
        """
        lay = self.layouts[kind]
        ids = np.asarray(entity_ids, dtype=np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= lay.n_entities):
            raise FrameError(f"{kind!r} entity ids must be in 0..{lay.n_entities - 1}")
        fields = fields or lay.fields
        field_idx = [lay.fields.index(f) for f in fields]
        blocks = np.unique(ids // lay.block_size)
        table = TelemetryChunk.__table__
        query = (
            select(table.c.block, table.c.ts_ms, table.c.data)
            .where(
                and_(
                    table.c.layout_id == self._layout_ids[kind],
                    table.c.block.in_([int(b) for b in blocks]),
                    table.c.ts_ms >= to_ms(start),
                    table.c.ts_ms <= to_ms(end),
                )
            )
            .order_by(table.c.ts_ms)
        )
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        ts_all = np.unique(np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows)))
        out = np.full((ts_all.size, len(fields), ids.size), np.nan, dtype=np.float32)
        n_fields = len(lay.fields)
        for block, ts_ms, data in rows:
            lo = block * lay.block_size
            width = min(lay.block_size, lay.n_entities - lo)
            chunk = np.frombuffer(data, dtype=np.float32).reshape(n_fields, width)
            mine = np.flatnonzero(ids // lay.block_size == block)
            t = np.searchsorted(ts_all, ts_ms)
            out[t][:, mine] = chunk[field_idx][:, ids[mine] - lo]
        return from_ms(ts_all), out

    def latest_ts(self, kind: str) -> datetime | None:
        """Time of the newest stored frame of ``kind``, or None."""
        table = TelemetryChunk.__table__
        with self.engine.connect() as conn:
            ts_ms = conn.execute(
                select(table.c.ts_ms)
                .where(table.c.layout_id == self._layout_ids[kind])
                .order_by(table.c.ts_ms.desc())
                .limit(1)
            ).scalar()
        return None if ts_ms is None else datetime.fromtimestamp(ts_ms / 1000, tz=UTC)

    def prune_before(self, ts: datetime) -> int:
        """Delete chunks older than ``ts``; returns the number of rows deleted."""
        table = TelemetryChunk.__table__
        with self.engine.begin() as conn:
            return conn.execute(
                table.delete().where(
                    and_(table.c.layout_id.in_(list(self._layout_ids.values())), table.c.ts_ms < to_ms(ts))
                )
            ).rowcount
