"""dcgm-exporter ``/metrics`` (Prometheus text 0.0.4) → normalised GPU samples, fast.

The parser is built for a full-site exposition (100k GPUs × ~25 fields ≈ 2.5 M lines):

* one compiled regex cuts the whole text (``re.split``, a flat list of strings) into
  (name, label block, value, timestamp) per sample line; a second alternative catches
  every other non-comment line so malformed lines are counted, not lost;
* the label block of GPU *i* on host *h* repeats across all ~25 families, so labels are
  parsed once per distinct raw ``{...}`` string (memoised across scrapes by
  :class:`DcgmParser`);
* values are converted in one pass and all checks (DCGM blank sentinels, zero-is-missing,
  physical ranges, duplicates) are numpy operations.

Vendor names → canonical quantities come from :data:`ingest.sources.names.DCGM_FIELDS`.  Series
without a canonical quantity are counted per name (``counts.unmapped_names``).
``Hostname`` and ``hostname`` labels, ``UUID``/``uuid``/``gpu_uuid``, MIG instances
(``GPU_I_ID``), NVLink/NVSwitch entity labels and unlabelled series are all accepted.
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
import time
from dataclasses import dataclass

import numpy as np

from ingest.sources import http
from ingest.sources.names import DCGM_FIELDS, dcgm_blank_mask
from ingest.sources.samples import (
    KIND_CODE,
    METRIC_CODE,
    EntityTable,
    FetchResult,
    IngestCounts,
    SampleBatch,
    check_values,
    empty_batch,
    failed,
    judged,
    keep_last,
)

log = logging.getLogger(__name__)

# Branch 1: a sample line.  Branch 2: any other non-comment, non-blank line (malformed).
_LINE = re.compile(
    r"^(?:([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?[ \t]+([^ \t\r\n]+)(?:[ \t]+(-?[0-9]+))?[ \t]*\r?"
    r"|([^#\s][^\n]*|[ \t]+[^\s#][^\n]*))$",
    re.MULTILINE,
)
_SIMPLE_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"\\\n]*)"')
_PAIR = re.compile(r'[ \t]*([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"((?:[^"\\\n]|\\.)*)"[ \t]*(?:,|$)')

FUTURE_TOLERANCE_S = 60.0  # timestamps further ahead of the local clock count as skew

# Exporter namespaces: with honorLabels the exporter's own pod/namespace label an idle GPU.
EXPORTER_NAMESPACES = frozenset({"gpu-operator", "nvidia-gpu-operator", "dcgm-exporter"})


@dataclass(frozen=True)
class Workload:
    """The Kubernetes workload holding a GPU, from pod labels (``exported_*`` first)."""

    namespace: str
    pod: str
    container: str


def parse_labels(block: str) -> dict[str, str] | None:
    """``{a="x",b="y\\"z"}`` → dict, unescaping ``\\\\ \\" \\n``; ``None`` if malformed."""
    inner = block[1:-1]
    if "\\" not in inner:
        pairs = _SIMPLE_PAIR.findall(inner)
        # fast path: exactly name="value" pairs joined by commas (optional trailing comma)
        used = sum(len(k) + len(v) for k, v in pairs) + 3 * len(pairs) + max(len(pairs) - 1, 0)
        if used == len(inner) or (used + 1 == len(inner) and inner.endswith(",")):
            return dict(pairs)
    labels: dict[str, str] = {}
    pos = 0
    n = len(inner)
    while pos < n:
        m = _PAIR.match(inner, pos)
        if m is None:
            if inner[pos:].strip(" \t,") == "":
                break
            return None
        value = m.group(2)
        if "\\" in value:
            value = value.replace("\\\\", "\x00").replace('\\"', '"').replace("\\n", "\n").replace("\x00", "\\")
        labels[m.group(1)] = value
        pos = m.end()
    return labels


def workload_of(labels: dict[str, str]) -> Workload | None:
    """Workload on a GPU, or ``None`` for an idle GPU (handles honorLabels true and false)."""
    if labels.get("exported_pod"):
        return Workload(
            labels.get("exported_namespace", ""), labels["exported_pod"], labels.get("exported_container", "")
        )
    pod, ns = labels.get("pod", ""), labels.get("namespace", "")
    if not pod or ns in EXPORTER_NAMESPACES or pod.startswith(("nvidia-dcgm-exporter", "dcgm-exporter")):
        return None
    return Workload(ns, pod, labels.get("container", ""))


MAX_GPU_INDEX = 2**31 - 1  # entity indexes are int32


def entity_key(labels: dict[str, str], default_host: str) -> tuple[int, str, int, str, str] | None:
    """(kind code, host, gpu index, uuid, sub-name) of one series' labels.

    ``None`` when the labels cannot name an entity: a ``gpu`` index beyond int32
    (callers count and skip that series).
    """
    host = labels.get("Hostname") or labels.get("hostname") or default_host
    uuid = labels.get("UUID") or labels.get("uuid") or labels.get("gpu_uuid") or ""
    gpu = labels.get("gpu", "")
    index = -1
    if gpu.isascii() and gpu.isdigit():
        if len(gpu) > 10 or int(gpu) > MAX_GPU_INDEX:
            return None
        index = int(gpu)
    name = ""
    if "GPU_I_ID" in labels:
        name = f"mig{labels['GPU_I_ID']}"
    if "nvlink" in labels:
        name = f"nvlink{labels['nvlink']}"
    if "nvswitch" in labels and index < 0:
        return KIND_CODE["other"], host, -1, uuid, f"nvswitch{labels['nvswitch']}" + (f"/{name}" if name else "")
    if index < 0 and not uuid:
        # unlabelled series: the whole host (only meaningful when default_host is given)
        return KIND_CODE["gpu"], host, -1, "", name
    return KIND_CODE["gpu"], host, index, uuid, name


@dataclass
class DcgmParse:
    """A parsed exposition: the sample batch plus per-entity workloads (K8s pod mapping)."""

    batch: SampleBatch
    workloads: dict[int, Workload]  # entity row → workload, only GPUs held by a pod


_MISSING = object()
# Label blocks memoised per parser (one parser serves every dcgm source of a process): a block is
# one entity's labels (~0.3-1 kB), so this bounds the memo to roughly 100-300 MB with 100k+ GPUs' worth.
MAX_CACHED_LABELS = 262_144


class DcgmParser:
    """Parses dcgm-exporter text; memoises label blocks across calls (same exporters, same labels).

    The memo is bounded (``max_cached_labels``) and only speeds repeated scrapes up; the
    output of :meth:`parse` does not depend on it.
    """

    def __init__(self, max_cached_labels: int = MAX_CACHED_LABELS) -> None:
        self._labels: dict[tuple[str, str], tuple[tuple, Workload | None] | None] = {}
        self._max = max_cached_labels
        self._fields: dict[str, tuple[int, float, bool, bool]] = {}
        self._lock = threading.Lock()
        self.label_hits_total = 0
        self.label_misses_total = 0

    def _field(self, name: str) -> tuple[int, float, bool, bool]:
        f = self._fields.get(name)
        if f is None:
            fm = DCGM_FIELDS.get(name)
            f = (
                (-1, 1.0, False, False)
                if fm is None
                else (METRIC_CODE[fm.canonical], fm.scale, fm.counter, fm.zero_is_missing)
            )
            self._fields[name] = f
        return f

    def _label_info(self, block: str, default_host: str) -> tuple[tuple, Workload | None] | None:
        """The entity key and workload of a label block, memoised by (block, default host)."""
        memo_key = (block, default_host)
        info = self._labels.get(memo_key, _MISSING)
        if info is not _MISSING:
            self.label_hits_total += 1
            return info
        self.label_misses_total += 1
        labels = parse_labels(block) if block else {}
        entity = None if labels is None else entity_key(labels, default_host)
        info = None if entity is None else (entity, workload_of(labels))
        with self._lock:
            if len(self._labels) >= self._max:  # forget the oldest quarter (insertion order)
                for old in list(itertools.islice(self._labels, max(1, self._max // 4))):
                    self._labels.pop(old, None)
            self._labels[memo_key] = info
        return info

    @property
    def cached_labels_count(self) -> int:
        return len(self._labels)

    def parse(self, text: str, default_host: str = "", fetched_at_s: float | None = None) -> DcgmParse:
        """Parse one exposition.  ``default_host`` names series without a host label.

        The lines are cut with ``re.split`` rather than ``re.findall``: split returns one
        flat list of strings, where findall builds a tuple per line, and millions of
        tuples set the cyclic garbage collector running over and over (it cost ~40 %).
        Strings are not tracked by the collector, so it stays enabled and idle here.
        """
        fetched = time.time() if fetched_at_s is None else fetched_at_s
        counts = IngestCounts()
        parts = _LINE.split(text)
        # parts: [between, name, labels, value, timestamp, junk, between, name, …]
        names, blocks, values, stamps, junk = parts[1::6], parts[2::6], parts[3::6], parts[4::6], parts[5::6]
        del parts
        if not names:
            counts.lines = 0
            return DcgmParse(_empty(counts, fetched), {})
        counts.lines = len(names)
        n_junk = len(junk) - junk.count(None)
        if n_junk:
            keep = [i for i, j in enumerate(junk) if j is None]
            counts.malformed_lines += n_junk
            names = [names[i] for i in keep]
            blocks = [blocks[i] for i in keep]
            values = [values[i] for i in keep]
            stamps = [stamps[i] for i in keep]
            _log_once_malformed(n_junk, junk)
            if not names:
                return DcgmParse(_empty(counts, fetched), {})

        fam, fam_names, fam_spec = self._families(names)
        ref, ents, workloads, bad_blocks = self._entities(blocks, default_host)
        value = _to_float(values, counts)
        ts = _timestamps(stamps, fetched, counts)

        keep = ref >= 0
        if bad_blocks:
            n_bad = int((~keep).sum())
            counts.malformed_lines += n_bad
            log.debug("dcgm: %d line(s) with malformed labels skipped, e.g. %s", n_bad, next(iter(bad_blocks))[:120])
        fam_code, fam_scale, fam_counter, fam_zero = fam_spec
        code = fam_code[fam]
        unmapped = code < 0
        if unmapped.any():
            per_fam = np.bincount(fam[unmapped & keep], minlength=len(fam_names))
            for i in np.flatnonzero(per_fam):
                counts.unmapped_names[fam_names[i]] += int(per_fam[i])
            counts.unmapped_series += int(per_fam.sum())
            keep &= ~unmapped
        idx = None if keep.all() else np.flatnonzero(keep)
        if idx is not None:
            fam, ref, value, ts, code = fam[idx], ref[idx], value[idx], ts[idx], code[idx]

        blank = dcgm_blank_mask(value, counter_field=False)
        blank &= ~(fam_counter[fam] & (value < 2.0**31))
        blank |= fam_zero[fam] & (value == 0.0)
        value = value * fam_scale[fam]
        value[blank] = np.nan
        value = check_values(code, value, counts)

        last = keep_last(ref, code, counts)
        if last is not None:
            ref, code, value, ts = ref[last], code[last], value[last], ts[last]
        counts.samples = int(value.size)
        ref, ents, workloads = _drop_unused_entities(ref, ents, workloads)
        batch = SampleBatch("dcgm", EntityTable.from_rows(ents), ref, code, value, ts, counts, fetched)
        return DcgmParse(batch, workloads)

    def _families(self, names: list[str]) -> tuple[np.ndarray, list[str], tuple[np.ndarray, ...]]:
        """(family index per line, family names, per family: field code, scale, counter flag, zero-is-blank flag)."""
        fam_of: dict[str, int] = {}
        fam_names: list[str] = []
        for nm in dict.fromkeys(names):
            fam_of[nm] = len(fam_names)
            fam_names.append(nm)
        fam = np.fromiter(map(fam_of.__getitem__, names), np.int32, len(names))
        specs = [self._field(nm) for nm in fam_names]
        spec = (
            np.array([s[0] for s in specs], np.int16),
            np.array([s[1] for s in specs]),
            np.array([s[2] for s in specs], bool),
            np.array([s[3] for s in specs], bool),
        )
        return fam, fam_names, spec

    def _entities(
        self, blocks: list[str], default_host: str
    ) -> tuple[np.ndarray, list[tuple], dict[int, Workload], set[str]]:
        """(entity row per line, -1 when its labels are malformed; entity keys; workloads by row; bad label blocks)."""
        row_of_block: dict[str, int] = {}
        row_of_key: dict[tuple, int] = {}
        ents: list[tuple] = []
        workloads: dict[int, Workload] = {}
        bad_blocks: set[str] = set()
        for block in dict.fromkeys(blocks):
            info = self._label_info(block, default_host)
            if info is None:
                bad_blocks.add(block)
                row_of_block[block] = -1
                continue
            key, wl = info
            row = row_of_key.get(key)
            if row is None:
                row = row_of_key[key] = len(ents)
                ents.append(key)
            row_of_block[block] = row
            if wl is not None:
                workloads[row] = wl
        ref = np.fromiter(map(row_of_block.__getitem__, blocks), np.int32, len(blocks))
        return ref, ents, workloads, bad_blocks


def _drop_unused_entities(
    ref: np.ndarray, ents: list[tuple], workloads: dict[int, Workload]
) -> tuple[np.ndarray, list[tuple], dict[int, Workload]]:
    """Leave out the entities whose every series was unmapped or malformed (rows renumbered)."""
    used = np.flatnonzero(np.bincount(ref, minlength=len(ents)))
    if used.size == len(ents):
        return ref, ents, workloads
    remap = np.full(len(ents), -1, np.int32)
    remap[used] = np.arange(used.size, dtype=np.int32)
    return (
        remap[ref],
        [ents[i] for i in used.tolist()],
        {int(remap[r]): wl for r, wl in workloads.items() if remap[r] >= 0},
    )


def _empty(counts: IngestCounts, fetched: float) -> SampleBatch:
    b = empty_batch("dcgm", counts)
    b.fetched_at_s = fetched
    return b


def _to_float(values, counts: IngestCounts) -> np.ndarray:
    """Strings → float64; unparsable ones become NaN and count as malformed."""
    try:
        return np.array(values, dtype=np.float64)
    except ValueError:
        out = np.empty(len(values))
        bad = 0
        for i, v in enumerate(values):
            try:
                out[i] = float(v)
            except ValueError:
                out[i] = np.nan
                bad += 1
        counts.malformed_lines += bad
        log.debug("dcgm: %d unparsable value(s) set to NaN", bad)
        return out


def _timestamps(stamps, fetched: float, counts: IngestCounts) -> np.ndarray:
    """Optional sample timestamps (ms) → seconds; absent ones get the fetch time."""
    n = len(stamps)
    if not any(stamps):
        return np.full(n, fetched)
    ts = np.array([float(s) / 1000.0 if s else fetched for s in stamps])
    ahead = int((ts > time.time() + FUTURE_TOLERANCE_S).sum())
    if ahead:
        counts.future_timestamps += ahead
        log.debug("dcgm: %d sample timestamp(s) ahead of the local clock (clock skew)", ahead)
    return ts


def _log_once_malformed(n: int, junk) -> None:
    example = next(j for j in junk if j is not None)
    log.debug("dcgm: %d malformed line(s) skipped, e.g. %r", n, example[:120])


_DEFAULT_PARSER = DcgmParser()


def parse_dcgm(text: str, default_host: str = "", fetched_at_s: float | None = None) -> SampleBatch:
    """Parse dcgm-exporter text into a :class:`SampleBatch` (see module docstring)."""
    return DcgmParser().parse(text, default_host, fetched_at_s).batch


# One exporter's page: ~100 KB for 8 GPUs with the default field set; 32 MiB leaves room
# for an exporter fronting thousands of GPUs (federation) without letting a runaway body in.
MAX_BYTES = 32 * 2**20


def fetch_dcgm(
    url: str,
    *,
    default_host: str = "",
    parser: DcgmParser | None = None,
    timeout_s: float = http.DEFAULT_TIMEOUT_S,
    retries: int = http.DEFAULT_RETRIES,
    backoff_s: float = http.DEFAULT_BACKOFF_S,
    max_bytes: int = MAX_BYTES,
    **http_kw,
) -> FetchResult:
    """Scrape one exporter and parse it; never raises (errors land in the result).

    ``timeout_s`` bounds each attempt in total (``deadline_s`` all of them), ``max_bytes``
    the body.  A page whose lines are mostly malformed is a failed read
    (:func:`ingest.sources.samples.garbage_reason`).  ``http_kw`` passes through to
    :func:`ingest.sources.http.get` (``session``, ``verify``, ``deadline_s`` …).
    """
    start = time.monotonic()
    try:
        resp = http.get(url, timeout_s=timeout_s, retries=retries, backoff_s=backoff_s, max_bytes=max_bytes, **http_kw)
    except http.FetchError as exc:
        log.debug("dcgm: %s", exc)
        return failed("dcgm", url, str(exc), exc.attempts, time.monotonic() - start)
    parsed = (parser or _DEFAULT_PARSER).parse(resp.text, default_host)
    return judged(FetchResult("dcgm", url, True, parsed.batch, resp.attempts, "", time.monotonic() - start))
