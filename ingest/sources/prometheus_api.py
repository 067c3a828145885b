"""Prometheus HTTP API (``/api/v1/query``, ``/api/v1/query_range``) → series and normalised samples.

:func:`parse_response` reads any API answer (vector, matrix, scalar, string; error
bodies with ``errorType``/``error``; ``warnings``/``infos``; values as strings including
``"NaN"``/``"+Inf"``) into a :class:`PromResponse` without raising.
:func:`to_samples` turns series that carry dcgm-exporter metric names (``__name__``, or
``metric_name`` for queries whose functions drop it) into a :class:`SampleBatch` with
the same name table, sentinels and range checks as :mod:`ingest.sources.dcgm`.  Energy series in
a matrix are checked for counter resets.  The fetchers are thin wrappers over
:func:`ingest.sources.http.get`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np

from ingest.sources import http
from ingest.sources.counters import reset_mask
from ingest.sources.dcgm import FUTURE_TOLERANCE_S, entity_key
from ingest.sources.jsondoc import JsonError, load_json
from ingest.sources.names import DCGM_FIELDS, dcgm_blank_mask
from ingest.sources.samples import (
    METRIC_CODE,
    EntityTable,
    FetchResult,
    IngestCounts,
    SampleBatch,
    check_values,
    failed,
)

log = logging.getLogger(__name__)

# The dcgm-exporter fields the twin reads by default (`clustertwin ingest once --source prometheus`).
DEFAULT_QUERY = (
    '{__name__=~"DCGM_FI_DEV_GPU_TEMP|DCGM_FI_DEV_MEMORY_TEMP|DCGM_FI_DEV_POWER_USAGE|'
    "DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_SM_CLOCK|DCGM_FI_DEV_XID_ERRORS|DCGM_FI_DEV_CLOCKS_EVENT_REASONS|"
    'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS|DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION|DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"}'
)


@dataclass
class PromSeries:
    """One series: labels and parallel timestamp/value arrays (one point for a vector)."""

    labels: dict[str, str]
    timestamp_s: np.ndarray
    value: np.ndarray


@dataclass
class PromResponse:
    """A parsed API answer.  ``ok`` is False for error bodies and unreadable answers."""

    ok: bool
    result_type: str = ""
    series: list[PromSeries] = field(default_factory=list)
    scalar: float | None = None  # scalar result value
    string: str | None = None  # string result value
    timestamp_s: float | None = None  # of a scalar/string result
    warnings: list[str] = field(default_factory=list)
    infos: list[str] = field(default_factory=list)
    error_type: str = ""
    error: str = ""
    malformed_points: int = 0


def _value(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError, OverflowError):
        return float("nan")


def _messages(value) -> list[str]:
    """``warnings``/``infos`` as a list of strings, whatever shape the server sent."""
    if isinstance(value, list):
        return [str(v) for v in value]
    return [] if value is None or value is False else [str(value)]


def parse_response(payload: str | bytes | dict) -> PromResponse:
    """Parse an API answer (JSON text or decoded dict).  Never raises."""
    if not isinstance(payload, dict):
        try:
            payload = load_json(payload)
        except JsonError as exc:
            return PromResponse(False, error_type="bad_response", error=str(exc))
        if not isinstance(payload, dict):
            return PromResponse(False, error_type="bad_response", error="JSON answer is not an object")
    warnings = _messages(payload.get("warnings"))
    infos = _messages(payload.get("infos"))
    if payload.get("status") != "success":
        return PromResponse(
            False,
            warnings=warnings,
            infos=infos,
            error_type=str(payload.get("errorType") or "bad_response"),
            error=str(payload.get("error") or f"status {payload.get('status')!r}"),
        )
    data = payload.get("data")
    if not isinstance(data, dict) or "resultType" not in data:
        return PromResponse(
            False, warnings=warnings, infos=infos, error_type="bad_response", error="no data.resultType"
        )
    rtype = data["resultType"]
    result = data.get("result")
    resp = PromResponse(True, rtype, warnings=warnings, infos=infos)
    if rtype in ("scalar", "string"):
        try:
            ts, v = result
            resp.timestamp_s = float(ts)
        except (TypeError, ValueError, OverflowError):
            return PromResponse(
                False,
                rtype,
                warnings=warnings,
                error_type="bad_response",
                error=f"bad {rtype} result {str(result)[:200]!r}",
            )
        if rtype == "scalar":
            resp.scalar = _value(v)
        else:
            resp.string = str(v)
        return resp
    if rtype not in ("vector", "matrix") or not isinstance(result, list):
        return PromResponse(
            False,
            str(rtype)[:40],
            warnings=warnings,
            error_type="bad_response",
            error=f"unsupported result {str(rtype)[:40]!r}",
        )
    for item in result:
        try:
            labels = {str(k): str(v) for k, v in item["metric"].items()}
            points = [item["value"]] if rtype == "vector" else item["values"]
            if not isinstance(points, list):
                raise TypeError("values is not a list")
        except (KeyError, TypeError, AttributeError):
            resp.malformed_points += 1  # includes native histograms: no plain value to read
            continue
        ts = np.empty(len(points))
        vals = np.empty(len(points))
        for i, p in enumerate(points):
            try:
                ts[i] = float(p[0])
                vals[i] = _value(p[1])
            except (TypeError, ValueError, IndexError, KeyError, OverflowError):
                ts[i] = np.nan
                vals[i] = np.nan
                resp.malformed_points += 1
        good = ~np.isnan(ts)
        resp.series.append(PromSeries(labels, ts[good], vals[good]))
    return resp


def to_samples(
    resp: PromResponse,
    *,
    metric_name: str | None = None,
    default_host: str = "",
    fetched_at_s: float | None = None,
    now_s: float | None = None,
) -> SampleBatch:
    """Series with dcgm-exporter names → :class:`SampleBatch` (other series are counted unmapped).

    A series appearing twice (same entity and metric) keeps the last one and counts a
    duplicate.  Timestamps more than a minute ahead of ``now_s`` count as clock skew.
    """
    fetched = time.time() if fetched_at_s is None else fetched_at_s
    now = time.time() if now_s is None else now_s
    counts = IngestCounts(malformed_lines=resp.malformed_points)
    chosen: dict[tuple, tuple[int, PromSeries, object]] = {}
    for s in resp.series:
        counts.lines += int(s.value.size)
        name = s.labels.get("__name__") or metric_name or ""
        fm = DCGM_FIELDS.get(name)
        if fm is None:
            counts.unmapped_series += 1
            counts.unmapped_names[name or "<no __name__>"] += 1
            continue
        key = entity_key(s.labels, default_host)
        if key is None:
            counts.malformed_lines += int(s.value.size)
            log.debug("prometheus: series with unusable labels skipped: %s", str(s.labels)[:120])
            continue
        mkey = (key, fm.canonical)
        if mkey in chosen:
            counts.duplicates += 1
        chosen[mkey] = (len(chosen), s, fm)

    ents: dict[tuple, int] = {}
    refs, metrics, values, stamps = [], [], [], []
    for (key, canonical), (_, s, fm) in chosen.items():
        row = ents.setdefault(key, len(ents))
        v = s.value.copy()
        blank = dcgm_blank_mask(v, counter_field=fm.counter)
        if fm.zero_is_missing:
            blank |= v == 0
        v = v * fm.scale
        v[blank] = np.nan
        if fm.counter and v.size > 1:
            n_resets = int(reset_mask(v).sum())
            if n_resets:
                counts.counter_resets += n_resets
                log.debug("prometheus: %s on %s went down %d time(s) (counter reset)", canonical, key[1], n_resets)
        refs.append(np.full(v.size, row, np.int32))
        metrics.append(np.full(v.size, METRIC_CODE[canonical], np.int16))
        values.append(v)
        stamps.append(s.timestamp_s)

    ref = np.concatenate(refs) if refs else np.zeros(0, np.int32)
    metric = np.concatenate(metrics) if metrics else np.zeros(0, np.int16)
    value = np.concatenate(values) if values else np.zeros(0)
    ts = np.concatenate(stamps) if stamps else np.zeros(0)
    value = check_values(metric, value, counts)
    ahead = int((ts > now + FUTURE_TOLERANCE_S).sum())
    if ahead:
        counts.future_timestamps += ahead
        log.debug("prometheus: %d sample(s) timestamped ahead of the local clock (clock skew)", ahead)
    counts.samples = int(value.size)
    keys = list(ents)
    table = EntityTable(
        np.array([k[0] for k in keys], np.int8),
        [k[1] for k in keys],
        np.array([k[2] for k in keys], np.int32),
        [k[3] for k in keys],
        [k[4] for k in keys],
    )
    return SampleBatch("prometheus", table, ref, metric, value, ts, counts, fetched)


# --- thin fetchers --------------------------------------------------------------------
_ACCEPT = frozenset({200, 400, 422})  # error bodies on 400/422 are JSON worth reading
# A site-wide query_range answer runs to tens of MB; 256 MiB bounds memory (the decoded
# JSON takes several times the text) while leaving room for the largest sensible query.
MAX_BYTES = 256 * 2**20


def query(base_url: str, promql: str, *, at_s: float | None = None, **http_kw) -> tuple[PromResponse, int]:
    """Instant query.  Returns ``(response, attempts)``; failures become ``ok=False``."""
    params = {"query": promql}
    if at_s is not None:
        params["time"] = f"{at_s:.3f}"
    return _call(base_url.rstrip("/") + "/api/v1/query", params, http_kw)


def query_range(
    base_url: str, promql: str, start_s: float, end_s: float, step_s: float, **http_kw
) -> tuple[PromResponse, int]:
    """Range query (``step_s`` seconds).  Returns ``(response, attempts)``."""
    params = {"query": promql, "start": f"{start_s:.3f}", "end": f"{end_s:.3f}", "step": f"{step_s:g}"}
    return _call(base_url.rstrip("/") + "/api/v1/query_range", params, http_kw)


def _call(url: str, params: dict, http_kw: dict) -> tuple[PromResponse, int]:
    try:
        r = http.get(url, params=params, accept_status=_ACCEPT, **{"max_bytes": MAX_BYTES, **http_kw})
    except http.FetchError as exc:
        log.debug("prometheus: %s", exc)
        return PromResponse(False, error_type="fetch", error=str(exc)), exc.attempts
    resp = parse_response(r.text)
    if not resp.ok:
        log.debug("prometheus: %s: %s: %s", url, resp.error_type, resp.error)
    return resp, r.attempts


def fetch_samples(
    base_url: str,
    promql: str = DEFAULT_QUERY,
    *,
    range_s: tuple[float, float, float] | None = None,
    metric_name: str | None = None,
    default_host: str = "",
    **http_kw,
) -> FetchResult:
    """Query (instant, or range when ``range_s=(start, end, step)``) and normalise; never raises."""
    t0 = time.monotonic()
    if range_s is None:
        resp, attempts = query(base_url, promql, **http_kw)
    else:
        resp, attempts = query_range(base_url, promql, *range_s, **http_kw)
    target = f"{base_url} {promql}"
    if not resp.ok:
        return failed("prometheus", target, f"{resp.error_type}: {resp.error}", attempts, time.monotonic() - t0)
    batch = to_samples(resp, metric_name=metric_name, default_host=default_host)
    return FetchResult(
        "prometheus", target, True, batch, attempts, "", time.monotonic() - t0, resp.warnings + resp.infos
    )
