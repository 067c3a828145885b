"""The normalised sample batch every ingest source produces: columnar arrays plus counts.

A :class:`SampleBatch` holds one read of one source.  Samples are parallel numpy arrays
(``entity_ref``, ``metric``, ``value``, ``timestamp_s``); the entities they refer to sit
once in an :class:`EntityTable` (raw identity as the source names it: host, index,
UUID, name).  :mod:`ingest.sources.inventory` resolves entity rows to the site's dense ids and
fills ``entity_id``.  Missing is NaN, never zero; everything skipped is counted in
:class:`IngestCounts`, nothing is dropped silently.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, fields

import numpy as np

from ingest.sources.names import VALID_RANGE
from twin.quantities import QUANTITIES

# Entity kinds a sample can belong to.  psu/fan-level readings carry the node's host and
# an instance index; pump readings carry their CDU's name and the pump index.
ENTITY_KINDS: tuple[str, ...] = ("gpu", "node", "psu", "cdu", "pump", "power_element", "rack", "other")
KIND_CODE: dict[str, int] = {k: i for i, k in enumerate(ENTITY_KINDS)}

METRICS: tuple[str, ...] = tuple(q.name for q in QUANTITIES)
METRIC_CODE: dict[str, int] = {m: i for i, m in enumerate(METRICS)}

_LO = np.array([VALID_RANGE.get(m, (-np.inf, np.inf))[0] for m in METRICS])
_HI = np.array([VALID_RANGE.get(m, (-np.inf, np.inf))[1] for m in METRICS])

_EXAMPLES = 20  # how many unknown names to remember for the report
_INDEX_MIN, _INDEX_MAX = -(2**31), 2**31 - 1


@dataclass
class IngestCounts:
    """What happened to the input of one read.  All fields are counts unless noted."""

    lines: int = 0  # input lines/records seen
    samples: int = 0  # samples kept (including NaN ones)
    malformed_lines: int = 0  # lines/records that could not be parsed (skipped)
    unmapped_series: int = 0  # series whose vendor metric has no canonical quantity
    missing_values: int = 0  # blank sentinels, NaN, "No Reading", 0 on zero-is-missing fields
    out_of_range: int = 0  # physically impossible values, set to NaN
    duplicates: int = 0  # repeated (entity, metric) in one read; the last one is kept
    unknown_hosts: int = 0  # entities whose host/name the inventory does not know
    unmapped_entities: int = 0  # entities without enough identity to map (no host, …)
    counter_resets: int = 0  # counters that went down between reads
    future_timestamps: int = 0  # source timestamps ahead of the local clock (clock skew)
    stale_values: int = 0  # values the source flags as not refreshed in its last interval (kept)
    unmapped_names: Counter = field(default_factory=Counter)  # vendor metric → series count
    unknown_host_names: list[str] = field(default_factory=list)  # first few unknown hosts

    def merge(self, other: IngestCounts) -> IngestCounts:
        """Add ``other`` into ``self`` (returns ``self``)."""
        for f in fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if isinstance(a, int):
                setattr(self, f.name, a + b)
        self.unmapped_names.update(other.unmapped_names)
        for h in other.unknown_host_names:
            if len(self.unknown_host_names) < _EXAMPLES and h not in self.unknown_host_names:
                self.unknown_host_names.append(h)
        return self

    def as_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["unmapped_names"] = dict(self.unmapped_names.most_common(_EXAMPLES))
        return d


@dataclass
class EntityTable:
    """Raw entity identities as the source names them (one row per distinct entity)."""

    kind: np.ndarray  # int8 codes into ENTITY_KINDS
    host: list[str]  # hostname (GPU/node/psu), equipment name (cdu/pump/power_element)
    index: np.ndarray  # int32 instance on the host: GPU 0..7, PSU, pump …; -1 if none
    uuid: list[str]  # GPU UUID or serial when known, else ""
    name: list[str]  # sub-entity name (sensor, fan, outlet …), "" if none

    @classmethod
    def from_rows(cls, rows: list[tuple[int, str, int, str, str]]) -> EntityTable:
        """From (kind code, host, index, uuid, name) tuples."""
        return cls(
            np.array([r[0] for r in rows], np.int8),
            [r[1] for r in rows],
            np.array([r[2] for r in rows], np.int32),
            [r[3] for r in rows],
            [r[4] for r in rows],
        )

    @classmethod
    def empty(cls) -> EntityTable:
        return cls(np.zeros(0, np.int8), [], np.zeros(0, np.int32), [], [])

    def __len__(self) -> int:
        return int(self.kind.size)

    def label(self, i: int) -> str:
        """Human-readable identity of row ``i`` (for the CLI and logs)."""
        parts = [self.host[i] or "?"]
        if self.index[i] >= 0:
            parts.append(f"{ENTITY_KINDS[self.kind[i]]}{self.index[i]}")
        if self.name[i]:
            parts.append(self.name[i])
        return "/".join(parts)


@dataclass
class SampleBatch:
    """One read of one source, normalised (see module docstring)."""

    source: str
    entities: EntityTable
    entity_ref: np.ndarray  # int32 row in ``entities`` per sample
    metric: np.ndarray  # int16 code into METRICS per sample
    value: np.ndarray  # float64 in the canonical unit, NaN = missing
    timestamp_s: np.ndarray  # float64 unix seconds (source time, else fetch time)
    counts: IngestCounts = field(default_factory=IngestCounts)
    fetched_at_s: float = field(default_factory=time.time)
    entity_id: np.ndarray | None = None  # int32 dense site id per sample (-1 unknown), set by inventory

    def __len__(self) -> int:
        return int(self.value.size)

    @property
    def entity_kind(self) -> np.ndarray:
        """int8 kind code per sample."""
        return self.entities.kind[self.entity_ref]

    @property
    def entity_index(self) -> np.ndarray:
        """int32 instance index per sample (GPU index, PSU number, …)."""
        return self.entities.index[self.entity_ref]

    def metric_names(self) -> list[str]:
        return [METRICS[m] for m in self.metric]

    def select(self, metric: str) -> SampleBatch:
        """The samples of one canonical metric."""
        keep = self.metric == METRIC_CODE[metric]
        return self.take(np.flatnonzero(keep))

    def take(self, idx: np.ndarray) -> SampleBatch:
        return SampleBatch(
            self.source,
            self.entities,
            self.entity_ref[idx],
            self.metric[idx],
            self.value[idx],
            self.timestamp_s[idx],
            self.counts,
            self.fetched_at_s,
            None if self.entity_id is None else self.entity_id[idx],
        )

    def rows(self) -> Iterator[tuple[str, str, str, float, float]]:
        """(entity kind, entity label, metric, value, timestamp_s) per sample, in order."""
        labels: dict[int, str] = {}
        for ref, m, v, t in zip(
            self.entity_ref.tolist(), self.metric.tolist(), self.value.tolist(), self.timestamp_s.tolist()
        ):
            if ref not in labels:
                labels[ref] = self.entities.label(ref)
            yield ENTITY_KINDS[self.entities.kind[ref]], labels[ref], METRICS[m], v, t


def empty_batch(source: str, counts: IngestCounts | None = None) -> SampleBatch:
    return SampleBatch(
        source,
        EntityTable.empty(),
        np.zeros(0, np.int32),
        np.zeros(0, np.int16),
        np.zeros(0),
        np.zeros(0),
        counts or IngestCounts(),
    )


def check_values(metric: np.ndarray, value: np.ndarray, counts: IngestCounts) -> np.ndarray:
    """NaN-out physically impossible values (per-metric ranges of :mod:`ingest.sources.names`).

    Counts NaN inputs as missing and impossible ones as out of range.  Returns ``value``
    (modified in place when possible).
    """
    value = np.asarray(value, dtype=np.float64)
    nan = np.isnan(value)
    counts.missing_values += int(nan.sum())
    with np.errstate(invalid="ignore"):
        bad = ~nan & ((value < _LO[metric]) | (value > _HI[metric]))
    n_bad = int(bad.sum())
    if n_bad:
        counts.out_of_range += n_bad
        value = value.copy() if not value.flags.writeable else value
        value[bad] = np.nan
    return value


def keep_last(entity_ref: np.ndarray, metric: np.ndarray, counts: IngestCounts) -> np.ndarray | None:
    """Indices keeping the last sample of each (entity, metric), or ``None`` if all unique.

    Counts the dropped repeats in ``counts.duplicates``.
    """
    n = entity_ref.size
    if n < 2:
        return None
    keys = entity_ref.astype(np.int64) * len(METRICS) + metric
    if int(keys.max()) < 64 * n + 1_000_000:
        if int(np.bincount(keys).max()) <= 1:
            return None
    rev = keys[::-1]
    _, first_in_rev = np.unique(rev, return_index=True)
    if first_in_rev.size == n:
        return None
    counts.duplicates += n - first_in_rev.size
    return np.sort(n - 1 - first_in_rev)


class BatchBuilder:
    """Collects samples one at a time (small sources: Redfish, IPMI, Prometheus JSON).

    ``add`` takes the raw entity identity; entities are deduplicated.  ``build`` range-
    checks values, keeps the last of duplicate samples and returns a :class:`SampleBatch`.
    """

    def __init__(self, source: str, fetched_at_s: float | None = None) -> None:
        self.source = source
        self.fetched_at_s = time.time() if fetched_at_s is None else fetched_at_s
        self.counts = IngestCounts()
        self._entity_row: dict[tuple, int] = {}
        self._ent: list[tuple[int, str, int, str, str]] = []
        self._ref: list[int] = []
        self._metric: list[int] = []
        self._value: list[float] = []
        self._ts: list[float] = []

    def entity(self, kind: str, host: str, index: int = -1, uuid: str = "", name: str = "") -> int:
        key = (kind, host, index, uuid, name)
        row = self._entity_row.get(key)
        if row is None:
            row = self._entity_row[key] = len(self._ent)
            self._ent.append((KIND_CODE[kind], host, index, uuid, name))
        return row

    def add(
        self,
        kind: str,
        host: str,
        metric: str,
        value: float,
        *,
        index: int = -1,
        uuid: str = "",
        name: str = "",
        timestamp_s: float | None = None,
    ) -> None:
        if not _INDEX_MIN <= index <= _INDEX_MAX:  # entity indexes are int32; a vendor number beyond is junk
            self.counts.malformed_lines += 1
            return
        self._ref.append(self.entity(kind, host, index, uuid, name))
        self._metric.append(METRIC_CODE[metric])
        self._value.append(value)
        self._ts.append(self.fetched_at_s if timestamp_s is None else timestamp_s)

    def unmapped(self, vendor_name: str, n: int = 1) -> None:
        self.counts.unmapped_series += n
        self.counts.unmapped_names[vendor_name] += n

    def build(self) -> SampleBatch:
        ents = self._ent
        table = EntityTable.from_rows(ents)
        ref = np.array(self._ref, np.int32)
        metric = np.array(self._metric, np.int16)
        value = check_values(metric, np.array(self._value, np.float64), self.counts)
        ts = np.array(self._ts, np.float64)
        idx = keep_last(ref, metric, self.counts)
        if idx is not None:
            ref, metric, value, ts = ref[idx], metric[idx], value[idx], ts[idx]
        self.counts.samples += int(value.size)
        return SampleBatch(self.source, table, ref, metric, value, ts, self.counts, self.fetched_at_s)


_USERINFO_PASSWORD = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<user>[^/\s:@]*):[^/\s@]*@")


def redact_url(url: str) -> str:
    """``url`` with the password of its user part replaced by ``***`` (``https://root:***@bmc/…``)."""
    return redact_text(url)


def redact_text(text: str) -> str:
    """``text`` with the password of every ``scheme://user:password@`` in it replaced by ``***``."""
    return _USERINFO_PASSWORD.sub(lambda m: f"{m['scheme']}{m['user']}:***@", text) if "@" in text else text


@dataclass
class FetchResult:
    """Outcome of one fetch of one target: never raised, always returned.

    ``ok`` is False when nothing fresh was read (``error`` says why, ``batch`` is empty
    and ``stale`` is True).  ``attempts`` counts HTTP/subprocess tries including retries.
    Per-line problems are not errors: they are counted in ``batch.counts``.
    """

    source: str
    target: str
    ok: bool
    batch: SampleBatch
    attempts: int = 1
    error: str = ""
    elapsed_s: float = 0.0
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        # a target URL may carry a BMC password (https://user:password@bmc): never kept, logged or shown
        self.target = redact_url(self.target)
        self.error = redact_text(self.error)

    @property
    def stale(self) -> bool:
        return not self.ok

    @property
    def counts(self) -> IngestCounts:
        return self.batch.counts


MAX_MALFORMED_FRAC = 0.5  # a read whose lines are mostly malformed is a failed read, not a sparse one


def garbage_reason(counts: IngestCounts) -> str:
    """Why a parsed page is not the format it claims to be ("" when it is plausible).

    More than :data:`MAX_MALFORMED_FRAC` of its lines malformed (random bytes, an HTML
    error page, a UTF-16 body read as UTF-8) means the read failed, even if a few lines
    happened to parse.
    """
    if counts.lines and counts.malformed_lines > MAX_MALFORMED_FRAC * counts.lines:
        return (
            f"not a valid page: {counts.malformed_lines} of {counts.lines} line(s) malformed "
            f"({counts.samples} sample(s) read)"
        )
    return ""


def judged(result: FetchResult) -> FetchResult:
    """``result``, turned into a failed read when :func:`garbage_reason` finds its page unusable.

    The counts of the parse are kept, so the report still says what was seen.
    """
    reason = garbage_reason(result.batch.counts) if result.ok else ""
    if not reason:
        return result
    return FetchResult(
        result.source,
        result.target,
        False,
        empty_batch(result.source, result.batch.counts),
        result.attempts,
        reason,
        result.elapsed_s,
        result.warnings,
    )


def failed(source: str, target: str, error: str, attempts: int = 1, elapsed_s: float = 0.0) -> FetchResult:
    """A :class:`FetchResult` for a read that produced nothing."""
    return FetchResult(source, target, False, empty_batch(source), attempts, error, elapsed_s)
