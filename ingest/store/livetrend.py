"""The leader's live trend in the database, so a follower shows the trend's history at once.

The ingest leader of a site (shard 0) writes each tick's trend values (site power, PUE,
GPU counts, throughput…) as one ``live_trend`` row, in the transaction that publishes its
live state (:func:`ingest.store.livestate.publish`), and deletes the rows older than the
trend window there too: the table holds at most one window of rows per site.  A follower
reads the rows newer than its own trend's last point (:func:`read_trend`) when it starts
and whenever it adopts a live state, so it shows the leader's earlier points at once and
catches up on ticks whose notifications it missed.
"""

from __future__ import annotations

import json
import math
from datetime import datetime

from sqlalchemy import delete, func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection, Engine

from ingest.store.models import LiveTrendPoint

MAX_READ_ROWS = 7200  # two hours of 1 s ticks: more than the trend keeps
_T = LiveTrendPoint.__table__

TrendRow = tuple[datetime, dict[str, float]]  # a tick's time and its trend values by column name


def _encode(values: dict[str, float]) -> str:
    return json.dumps(
        {k: (float(v) if v is not None and math.isfinite(v) else None) for k, v in values.items()},
        separators=(",", ":"),
    )


def _decode(text: str) -> dict[str, float]:
    try:
        values = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(values, dict):
        return {}
    return {str(k): float(v) if isinstance(v, (int, float)) else math.nan for k, v in values.items()}


def write_trend(conn: Connection, site_name: str, rows: list[TrendRow], keep_from: datetime | None) -> None:
    """Store ``rows`` (replacing rows of the same time) and delete the site's rows older than ``keep_from``."""
    if rows:
        insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
        stmt = insert(_T).values(
            [{"site_name": site_name, "ts": ts, "values_json": _encode(values)} for ts, values in rows]
        )
        conn.execute(
            stmt.on_conflict_do_update(
                index_elements=[_T.c.site_name, _T.c.ts], set_={"values_json": stmt.excluded.values_json}
            )
        )
    if keep_from is not None:
        conn.execute(delete(_T).where(_T.c.site_name == site_name, _T.c.ts < keep_from))


def read_trend(
    engine: Engine, site_name: str, after: datetime | None = None, limit: int = MAX_READ_ROWS
) -> list[TrendRow]:
    """The site's rows newer than ``after`` (all when None), oldest first; the newest ``limit`` of them."""
    query = select(_T.c.ts, _T.c.values_json).where(_T.c.site_name == site_name)
    if after is not None:
        query = query.where(_T.c.ts > after)
    with engine.connect() as conn:
        rows = conn.execute(query.order_by(_T.c.ts.desc()).limit(limit)).all()
    return [(row.ts, _decode(row.values_json)) for row in reversed(rows)]


def rows_total(engine: Engine, site_name: str) -> int:
    """How many trend rows the site has in the table."""
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(_T).where(_T.c.site_name == site_name)).scalar_one())
