"""Helios per-team GPU quotas over time (``data/Venus/cluster_gpu_number.csv``) [Helios-SC21].

Header ``date,<vc>,…,total``; one row per day with the GPUs assigned to each virtual cluster
(team).  They become quota changes for the fleet's ClusterQueues: at ``(day − first day)`` the
team's nominal quota is set to that day's GPUs (only when it changes).  ``scale`` multiplies
them (Venus had 1,000-odd GPUs; colossus has 100,352).
"""

from __future__ import annotations

import csv
import io
import math
from datetime import date
from pathlib import Path

from ingest.workload.common import MAX_BYTES, MAX_ROWS, ImportResult, WorkloadInputError, read_capped


def read_helios_quotas(
    path: Path | str, scale: float = 1.0, max_bytes: int = MAX_BYTES, max_rows: int = MAX_ROWS
) -> ImportResult:
    """Quota changes ``(time_s, team, nominal GPUs)`` of a Helios quota CSV."""
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError("scale must be positive")
    res = ImportResult(source=f"helios:{path}")
    text = read_capped(path, max_bytes).decode("utf-8", errors="replace")
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if not header or header[0] != "date":
        raise WorkloadInputError(f"{path}: not a Helios quota table (first column must be 'date')")
    teams = [h for h in header[1:] if h != "total"]
    first: date | None = None
    last: dict[str, int] = {}
    for n, row in enumerate(reader, 2):
        if n > max_rows + 1:
            res.notes.append(f"stopped at the row cap of {max_rows:,} rows")
            break
        res.rows_count += 1
        try:
            day = date.fromisoformat(row[0])
            first = first or day
            t = (day - first).days * 86400.0
            for team, cell in zip(teams, row[1 : 1 + len(teams)]):
                gpus = int(round(int(cell) * scale))
                if gpus < 0:
                    raise ValueError(f"{team}: negative GPUs")
                if last.get(team) != gpus:
                    res.quotas.append((t, team, gpus))
                    last[team] = gpus
        except (ValueError, IndexError) as exc:
            res.skip(f"line {n}", str(exc))
    return res
