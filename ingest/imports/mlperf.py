"""MLPerf power logs: ``:::MLLOG`` lines with ``power_reading`` (node AC input [W]) and the run's phases.

A power log has one JSON object per ``:::MLLOG`` line; ``power_reading`` values are watts
with ``time_ms`` in epoch milliseconds and ``metadata.host`` naming the node (MLPerf
Training power rules, mlcommons/logging).  The run's own log (``result_N.txt``) gives the
phases (``run_start``, ``block_start``/``_stop``, ``eval_start``/``_stop``, ``run_stop``),
which become info events of the incident.  Lines may carry a rank prefix (`` 0: :::MLLOG``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ingest.imports.series import ImportError_, make_series

PHASE_KEYS = ("init_start", "init_stop", "run_start", "block_start", "block_stop", "eval_start", "eval_stop",
              "run_stop")


def mllog_records(text: str) -> list[dict]:
    """The JSON records of the ``:::MLLOG`` lines of ``text`` (malformed lines skipped)."""
    out = []
    for line in text.splitlines():
        _, sep, payload = line.partition(":::MLLOG")
        if not sep:
            continue
        try:
            out.append(json.loads(payload))
        except ValueError:
            continue
    return out


def parse_power_log(text: str, default_host: str) -> pd.DataFrame:
    """``power_reading`` records as a series of ``node_power_w`` (host from metadata, else ``default_host``)."""
    rows = []
    for rec in mllog_records(text):
        if rec.get("key") != "power_reading" or not isinstance(rec.get("value"), (int, float)):
            continue
        host = str((rec.get("metadata") or {}).get("host", default_host))
        rows.append((int(rec["time_ms"]), host if host and not host.isdigit() else default_host, -1,
                     "node_power_w", float(rec["value"])))
    return make_series(rows)


def parse_run_log(text: str) -> list[dict]:
    """Phase events of a run's MLPerf log (ts_ms, message …, as the bundle's events table wants)."""
    out = []
    for rec in mllog_records(text):
        key = rec.get("key")
        if key not in PHASE_KEYS:
            continue
        samples = (rec.get("metadata") or {}).get("samples_count")
        out.append({"ts_ms": int(rec["time_ms"]), "severity": "info", "source": "mlperf", "entity_kind": "site",
                    "entity_id": 0, "entity_name": "run", "metric": key, "value": float(samples) if samples is not None
                    else None, "message": key.replace("_", " ")})
    return out


def read_power_logs(source: Path) -> pd.DataFrame:
    """Every ``node_*.txt`` power log of a directory (or one file); host names are the file stems."""
    files = sorted(source.glob("node_*.txt")) if source.is_dir() else [source]
    if not files:
        raise ImportError_(f"{source}: no node_*.txt MLPerf power logs")
    parts = [parse_power_log(f.read_text(errors="replace"), f.stem) for f in files]
    series = pd.concat(parts, ignore_index=True)
    if series.empty:
        raise ImportError_(f"{source}: no power_reading lines")
    return series
