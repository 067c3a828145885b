"""The leader's live state in the database, for followers: one row per site, replaced every tick.

The ingest leader of a site (shard 0) publishes each tick's snapshot and detail, with
what the pages read beside them (source ages, job timelines), as one :class:`LiveState`
row: an upsert, so the table holds one row per site however long it runs.  On PostgreSQL
the same transaction sends ``NOTIFY clustertwin_live, '<site> <seq>'``; an acknowledgement
or silence written by any process sends ``NOTIFY clustertwin_alerts, '<site>'``.  SQLite
has no notifications: followers poll the row's ``seq`` instead (:mod:`ingest.live.follower`).
The same transaction stores the trend points since the last publication (:mod:`ingest.store.livetrend`).

The payload is a small self-describing format, not pickle (a row must never run code in a
reader): a JSON header holding the scalars and the structure of the dataclasses, then the
raw bytes of every numpy array, all zlib-compressed (level 1).  Float arrays are stored as
float32 (the precision of the stored frames); scalars (site totals) keep float64.  Only
dataclasses of the ``twin`` package are rebuilt.  Colossus publishes 173 kB a tick with its
default job, 447 kB with every GPU powered (measured figures in docs/deploy.md).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import struct
import zlib
from datetime import datetime

import numpy as np
from sqlalchemy import select, text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection, Engine

from ingest.store.livetrend import TrendRow, write_trend
from ingest.store.models import LiveState, utcnow

LIVE_CHANNEL = "clustertwin_live"  # payload "<site> <seq>": a new live state
ALERTS_CHANNEL = "clustertwin_alerts"  # payload "<site>": an alert was acknowledged, silenced or unsilenced
MAGIC = b"CTLS1"
_LEN = struct.Struct("<I")
_TABLE = LiveState.__table__
_ALLOWED_PACKAGE = "twin."  # dataclasses rebuilt from a payload must live here


class LiveStateError(ValueError):
    """A stored live state cannot be read (wrong format, foreign class, truncated)."""


# ------------------------------------------------------------------ encoding
def encode_state(obj) -> bytes:
    """``obj`` (dataclasses, arrays, datetimes, dicts, lists, scalars) as compressed bytes."""
    arrays: list[np.ndarray] = []

    def enc(x):
        if isinstance(x, np.ndarray):
            if x.dtype == object:
                raise LiveStateError("object arrays cannot be published")
            if x.dtype.kind == "f" and x.dtype.itemsize > 4:
                x = x.astype(np.float32)
            arrays.append(np.ascontiguousarray(x))
            return {"@nd": len(arrays) - 1}
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            cls = type(x)
            return {
                "@dc": f"{cls.__module__}:{cls.__qualname__}",
                "f": {f.name: enc(getattr(x, f.name)) for f in dataclasses.fields(x)},
            }
        if isinstance(x, datetime):
            return {"@dt": x.isoformat()}
        if isinstance(x, dict):
            return {"@map": [[enc(k), enc(v)] for k, v in x.items()]}
        if isinstance(x, tuple):
            return {"@t": [enc(v) for v in x]}
        if isinstance(x, list):
            return [enc(v) for v in x]
        if isinstance(x, np.generic):
            return x.item()
        if x is None or isinstance(x, (bool, int, float, str)):
            return x
        raise LiveStateError(f"cannot publish a {type(x).__name__}")

    tree = enc(obj)
    meta = [[a.dtype.str, list(a.shape)] for a in arrays]
    header = json.dumps({"tree": tree, "arrays": meta}, separators=(",", ":")).encode()
    body = b"".join([_LEN.pack(len(header)), header] + [a.tobytes() for a in arrays])
    return MAGIC + zlib.compress(body, 1)


def _dataclass(name: str):
    module, _, qualname = name.partition(":")
    if not module.startswith(_ALLOWED_PACKAGE):
        raise LiveStateError(f"class {name!r} is not one of the twin's")
    cls = importlib.import_module(module)
    for part in qualname.split("."):
        cls = getattr(cls, part, None)
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise LiveStateError(f"class {name!r} is not a dataclass of the twin")
    return cls


def decode_state(blob: bytes):
    """The object :func:`encode_state` encoded; :class:`LiveStateError` when ``blob`` is not one."""
    if not blob.startswith(MAGIC):
        raise LiveStateError("not a live state (bad magic)")
    try:
        body = bytearray(zlib.decompress(blob[len(MAGIC) :]))
        (n,) = _LEN.unpack_from(body)
        head = json.loads(bytes(body[_LEN.size : _LEN.size + n]))
    except (zlib.error, struct.error, ValueError) as exc:
        raise LiveStateError(f"live state unreadable: {exc}") from None
    arrays, offset = [], _LEN.size + n
    for dtype_str, shape in head["arrays"]:
        dtype = np.dtype(dtype_str)
        if dtype.kind == "O":
            raise LiveStateError("object arrays are refused")
        size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if offset + size > len(body):
            raise LiveStateError("live state truncated")
        arrays.append(
            np.frombuffer(
                body, dtype=dtype, count=size // dtype.itemsize if dtype.itemsize else 0, offset=offset
            ).reshape(shape)
        )
        offset += size

    def dec(x):
        if isinstance(x, list):
            return [dec(v) for v in x]
        if not isinstance(x, dict):
            return x
        if "@nd" in x:
            return arrays[x["@nd"]]
        if "@dc" in x:
            return _dataclass(x["@dc"])(**{k: dec(v) for k, v in x["f"].items()})
        if "@dt" in x:
            return datetime.fromisoformat(x["@dt"])
        if "@map" in x:
            return {dec(k): dec(v) for k, v in x["@map"]}
        if "@t" in x:
            return tuple(dec(v) for v in x["@t"])
        raise LiveStateError(f"unknown node {sorted(x)!r}")

    return dec(head["tree"])


# ------------------------------------------------------------------ storage
def is_postgres(engine: Engine) -> bool:
    return engine.dialect.name == "postgresql"


def notify(conn: Connection, channel: str, payload: str) -> None:
    """Send a notification within ``conn``'s transaction (delivered at commit); nothing on SQLite."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_notify(:channel, :payload)"), {"channel": channel, "payload": payload})


def publish(
    engine: Engine,
    site_name: str,
    seq: int,
    ts: datetime,
    holder: str,
    payload: bytes,
    trend: list[TrendRow] = (),
    trend_keep_from: datetime | None = None,
) -> None:
    """Replace the site's live state by ``payload`` (tick ``seq`` at ``ts``) and notify followers.

    ``trend``: the trend rows since the last publication, stored in the same transaction
    (rows older than ``trend_keep_from`` are deleted: :mod:`ingest.store.livetrend`).
    """
    values = {
        "site_name": site_name,
        "seq": seq,
        "ts": ts,
        "holder": holder,
        "payload": payload,
        "published_at": utcnow(),
    }
    insert = pg_insert if is_postgres(engine) else sqlite_insert
    stmt = insert(_TABLE).values(**values)
    stmt = stmt.on_conflict_do_update(
        index_elements=[_TABLE.c.site_name], set_={k: stmt.excluded[k] for k in values if k != "site_name"}
    )
    with engine.begin() as conn:
        conn.execute(stmt)
        write_trend(conn, site_name, list(trend), trend_keep_from)
        notify(conn, LIVE_CHANNEL, f"{site_name} {seq}")


def latest_seq(engine: Engine, site_name: str) -> tuple[int, str] | None:
    """(seq, holder) of the site's live state, or None when nothing was published."""
    with engine.connect() as conn:
        row = conn.execute(select(_TABLE.c.seq, _TABLE.c.holder).where(_TABLE.c.site_name == site_name)).first()
    return None if row is None else (int(row.seq), row.holder)


def read_latest(engine: Engine, site_name: str) -> tuple[int, str, bytes] | None:
    """(seq, holder, payload) of the site's live state, or None."""
    with engine.connect() as conn:
        row = conn.execute(
            select(_TABLE.c.seq, _TABLE.c.holder, _TABLE.c.payload).where(_TABLE.c.site_name == site_name)
        ).first()
    return None if row is None else (int(row.seq), row.holder, bytes(row.payload))
