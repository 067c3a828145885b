"""``dcgmi dmon`` text output: header lines, then one row per entity per loop, no timestamps.

Layout [DCGMI-Dmon]::

    #Entity   TMPTR  POWER  GPUTL  SMCLK
    ID        C      W
    GPU 0     45     312.5  97     1980

The header is reprinted every 14 rows; ``N/A`` is missing.  Rows carry no time, so each
loop (a new pass over the entities) is ``interval_s`` after the previous one from
``start``.  Only ``GPU n`` rows are read (MIG instances and NVLink rows are skipped).
"""

from __future__ import annotations

import math
from datetime import datetime

import pandas as pd

from ingest.imports.series import RecordingImportError, make_series

# short name → (canonical metric, scale)
SHORT_NAMES = {
    "TMPTR": ("gpu_temp_c", 1.0),
    "MMTMP": ("hbm_temp_c", 1.0),
    "POWER": ("gpu_power_w", 1.0),
    "GPUTL": ("gpu_util_frac", 0.01),
    "SMCLK": ("sm_clock_mhz", 1.0),
    "XIDER": ("last_xid_code", 1.0),
}


MAX_GPU_INDEX = 1023  # GPU ids of one host; a larger one is a corrupt line


def parse_dmon(text: str, host: str, start: datetime, interval_s: float = 1.0) -> pd.DataFrame:
    """The GPU rows of ``text`` as a series (see module docstring)."""
    if start.tzinfo is None:
        raise RecordingImportError("dcgmi dmon: the start time needs a time zone")
    fields: list[str] | None = None
    loop, seen = -1, set()
    start_ms = int(start.timestamp() * 1000)
    out = []
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "#Entity":
            fields = parts[1:]
            continue
        if parts[0] == "ID" or fields is None:
            continue
        if parts[0] != "GPU" or len(parts) < 2 or not parts[1].isdigit() or len(parts) > 2 + len(fields):
            continue
        if len(parts) > 2 and parts[2] == "LINK":
            continue
        gpu = int(parts[1])
        if gpu > MAX_GPU_INDEX:
            continue
        if gpu in seen or loop < 0:
            loop, seen = loop + 1, set()
        seen.add(gpu)
        ts = start_ms + int(round(loop * interval_s * 1000))
        for name, raw in zip(fields, parts[2:]):
            if name in SHORT_NAMES and raw != "N/A":
                metric, scale = SHORT_NAMES[name]
                try:
                    value = float(raw) * scale
                except ValueError:
                    continue
                if math.isfinite(value):
                    out.append((ts, host, gpu, metric, value))
    if fields is None:
        raise RecordingImportError("dcgmi dmon: no '#Entity' header line")
    return make_series(out)
