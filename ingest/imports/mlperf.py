"""MLPerf power logs: ``:::MLLOG`` lines with ``power_reading`` (node AC input [W]) and the run's phases.

A power log has one JSON object per ``:::MLLOG`` line; ``power_reading`` values are watts
with ``time_ms`` in epoch milliseconds and ``metadata.host`` naming the node (MLPerf
Training power rules, mlcommons/logging).  The run's own log (``result_N.txt``) gives the
phases (``run_start``, ``block_start``/``_stop``, ``eval_start``/``_stop``, ``run_stop``),
which become info events of the incident.  Lines may carry a rank prefix (`` 0: :::MLLOG``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from ingest.imports.series import RecordingImportError, make_series

PHASE_KEYS = (
    "init_start",
    "init_stop",
    "run_start",
    "block_start",
    "block_stop",
    "eval_start",
    "eval_stop",
    "run_stop",
)


MAX_TIME_MS = 4_102_444_800_000  # 2100-01-01: later time stamps are not real recordings


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def mllog_records(text: str) -> list[dict]:
    """The JSON records of the ``:::MLLOG`` lines of ``text`` (malformed lines skipped)."""
    out = []
    for line in text.splitlines():
        _, sep, payload = line.partition(":::MLLOG")
        if not sep:
            continue
        try:
            record = json.loads(payload)
        except ValueError:
            continue
        if isinstance(record, dict):
            out.append(record)
    return out


def parse_power_log(text: str, default_host: str) -> pd.DataFrame:
    """``power_reading`` records as a series of ``node_power_w`` (host from metadata, else ``default_host``)."""
    rows = []
    for rec in mllog_records(text):
        value, time_ms = rec.get("value"), rec.get("time_ms")
        if (
            rec.get("key") != "power_reading"
            or not _finite(value)
            or not _finite(time_ms)
            or not 0 <= time_ms < MAX_TIME_MS
        ):
            continue
        metadata = rec.get("metadata")
        host = str(metadata.get("host", default_host)) if isinstance(metadata, dict) else default_host
        rows.append(
            (int(time_ms), host if host and not host.isdigit() else default_host, -1, "node_power_w", float(value))
        )
    return make_series(rows)


def parse_run_log(text: str) -> list[dict]:
    """Phase events of a run's MLPerf log (ts_ms, message …, as the bundle's events table wants)."""
    out = []
    for rec in mllog_records(text):
        key = rec.get("key")
        if key not in PHASE_KEYS:
            continue
        samples = (rec.get("metadata") or {}).get("samples_count")
        out.append(
            {
                "ts_ms": int(rec["time_ms"]),
                "severity": "info",
                "source": "mlperf",
                "entity_kind": "site",
                "entity_id": 0,
                "entity_name": "run",
                "metric": key,
                "value": float(samples) if samples is not None else None,
                "message": key.replace("_", " "),
            }
        )
    return out


def read_power_logs(source: Path) -> pd.DataFrame:
    """Every ``node_*.txt`` power log of a directory (or one file); host names are the file stems."""
    files = sorted(source.glob("node_*.txt")) if source.is_dir() else [source]
    if not files:
        raise RecordingImportError(f"{source}: no node_*.txt MLPerf power logs")
    parts = [parse_power_log(f.read_text(errors="replace"), f.stem) for f in files]
    series = pd.concat(parts, ignore_index=True)
    if series.empty:
        raise RecordingImportError(f"{source}: no power_reading lines")
    return series
