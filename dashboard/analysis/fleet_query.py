"""Server-side paging of the fleet's jobs: filter by state and text, sort by a column, cut one page.

The fleet page's table asks for one page at a time (``page_action="custom"``), so a
queue of 10,000 jobs never travels to the browser whole.  :func:`query_jobs` works on
the columns of an :class:`ingest.live.fleet_frame.FleetFrame` (numpy arrays) and
formats only the rows of the page asked for.  Times in the rows are relative to the
frame's instant ("in 2 h 10 min", "3 h 05 min ago").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from twin.cache import BoundedCache

SEARCH_COLUMNS = ("job_id", "team", "user", "kind", "reason", "hall", "pod")
NUMERIC_COLUMNS = {"n_gpus", "submit_s", "start_s", "expected_start_s", "expected_end_s", "wait_s", "age_s"}
STATES = ("all", "running", "pending")
PAGE_SIZE = 20
MAX_SEARCH_CHARS = 100
# key: id() of a frame's job-id column → (that column, the lower-case search text per row); checked
# against the column itself, since an id is reused once a frame is gone
_SEARCH_CACHE: BoundedCache[tuple[np.ndarray, np.ndarray]] = BoundedCache(8)


@dataclass(frozen=True)
class JobPage:
    """One page of rows (display-ready dicts), the number of matching jobs and the page count."""

    rows: list[dict]
    total_count: int
    page_count: int
    page: int


def _search_text(jobs: dict) -> np.ndarray:
    ids = jobs["job_id"]

    def make() -> tuple[np.ndarray, np.ndarray]:
        parts = [np.asarray(jobs[c], dtype=str) for c in SEARCH_COLUMNS]
        text = parts[0]
        for p in parts[1:]:
            text = np.char.add(np.char.add(text, " "), p)
        return ids, np.char.lower(text)

    return _SEARCH_CACHE.get_or_make(id(ids), make, valid=lambda v: v[0] is ids)[1]


def matching_rows(jobs: dict, state: str, search: str) -> np.ndarray:
    """Rows in ``state`` (``all``, ``running`` or ``pending``) whose text holds every word of ``search``."""
    n = jobs["job_id"].size
    keep = np.ones(n, bool) if state == "all" else jobs["state"] == state
    words = (search or "")[:MAX_SEARCH_CHARS].lower().split()
    if words:
        text = _search_text(jobs)
        for w in words:
            keep &= np.char.find(text, w) >= 0
    return np.flatnonzero(keep)


def _sort_values(jobs: dict, column: str, now_s: float) -> np.ndarray:
    if column == "wait_s":
        start = np.where(np.isnan(jobs["start_s"]), now_s, jobs["start_s"])
        return start - jobs["submit_s"]
    if column == "age_s":
        return now_s - jobs["start_s"]
    return jobs[column]


def sorted_rows(jobs: dict, rows: np.ndarray, sort_by: list[dict] | None, now_s: float) -> np.ndarray:
    """``rows`` in the order of the first ``sort_by`` entry (``column_id``, ``direction``); unknown values last."""
    if not sort_by:
        return rows
    column = sort_by[0].get("column_id")
    if column not in jobs and column not in NUMERIC_COLUMNS:
        return rows
    descending = sort_by[0].get("direction") == "desc"
    values = _sort_values(jobs, column, now_s)[rows]
    if column in NUMERIC_COLUMNS:
        v = values.astype(np.float64)
        missing = np.isnan(v)
        v = np.where(missing, 0.0, -v if descending else v)
        order = np.lexsort((v, missing))
    else:
        order = np.argsort(values.astype(str), kind="stable")
        if descending:
            order = order[::-1]
    return rows[order]


def _clock(delta_s: float) -> str:
    """``2 h 05 min`` / ``45 min`` / ``30 s`` for a positive span."""
    if delta_s < 60:
        return f"{delta_s:.0f} s"
    minutes = int(delta_s // 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes:02d} min"
    return f"{hours / 24:.1f} d"


def relative(t_s: float, now_s: float) -> str:
    """``in 2 h 05 min`` or ``3 min ago``; ``–`` when not known."""
    if not math.isfinite(t_s):
        return "–"
    d = t_s - now_s
    return f"in {_clock(d)}" if d >= 0 else f"{_clock(-d)} ago"


def display_row(jobs: dict, i: int, now_s: float) -> dict:
    """One job as the table shows it."""
    running = jobs["state"][i] == "running"
    start = float(jobs["start_s"][i])
    wait = (start if running else now_s) - float(jobs["submit_s"][i])
    return {
        "job_id": jobs["job_id"][i],
        "state": jobs["state"][i],
        "team": jobs["team"][i],
        "user": jobs["user"][i],
        "kind": jobs["kind"][i],
        "n_gpus": int(jobs["n_gpus"][i]),
        "wait_s": _clock(max(wait, 0.0)) if math.isfinite(wait) else "–",
        "age_s": _clock(now_s - start) if running and math.isfinite(start) else "",
        "reason": jobs["reason"][i],
        "expected_start_s": "" if running else relative(float(jobs["expected_start_s"][i]), now_s),
        "expected_end_s": relative(float(jobs["expected_end_s"][i]), now_s) if running else "",
        "place": f"{jobs['hall'][i]} · {jobs['pod'][i]}" if running and jobs["hall"][i] else "",
    }


def query_jobs(
    frame, state: str = "all", search: str = "", sort_by: list[dict] | None = None, page: int = 0, size: int = PAGE_SIZE
) -> JobPage:
    """Page ``page`` (from 0) of the frame's jobs in ``state`` matching ``search``, sorted by ``sort_by``."""
    state = state if state in STATES else "all"
    size = min(max(int(size), 1), 200)
    rows = matching_rows(frame.jobs, state, search)
    rows = sorted_rows(frame.jobs, rows, sort_by, frame.ts_s)
    pages = max(1, math.ceil(rows.size / size))
    page = min(max(int(page or 0), 0), pages - 1)
    cut = rows[page * size : (page + 1) * size]
    return JobPage(
        rows=[display_row(frame.jobs, int(i), frame.ts_s) for i in cut.tolist()],
        total_count=int(rows.size),
        page_count=pages,
        page=page,
    )
