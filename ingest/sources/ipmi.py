"""ipmitool output (``sdr elist``, ``sdr list``, ``sensor``, ``sdr -v``) → BMC readings → samples.

:func:`parse_ipmitool` reads any of the four text layouts (detected per line / record)
into :class:`IpmiReading` rows: value in the printed unit (NaN for ``ns``, ``na``,
``No Reading``, ``Disabled``, discrete states), status, sensor number, entity,
thresholds when printed.  A line that fits no layout is skipped and counted.
:func:`to_samples` maps sensor names to canonical metrics with the BMC name table of
:mod:`ingest.sources.names` (``GPU0 Temp``, ``TEMP_GB_SXM1``, ``PSU Power``, ``Inlet Temp`` …).

:func:`fetch_ipmi` runs ``ipmitool -I lanplus -C 3 …`` in a subprocess with a timeout.
``-C 3`` matters: without it lanplus first asks for cipher suites and each call takes
about 10 s.  The password goes through the environment (``-E``), not the command line.
"""

from __future__ import annotations

import logging
import math
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from urllib.parse import unquote, urlparse

from ingest.sources.names import match_sensor, normalise_unit
from ingest.sources.samples import BatchBuilder, FetchResult, IngestCounts, SampleBatch, failed, judged

log = logging.getLogger(__name__)

_NO_VALUE = {"", "na", "no reading", "disabled", "not readable", "not available", "unavailable", "n/a"}
_NUM_UNIT = re.compile(
    r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(?:\(\+/-\s*[\d.]+\)\s*)?([^,]*?)\s*(?:,\s*(.*))?$"
)
_SENSOR_NO = re.compile(r"^[0-9a-fA-F]{1,2}h$")
_VERBOSE_ID = re.compile(r"^Sensor ID\s*:\s*(.*?)\s*\((0x[0-9a-fA-F]+)\)\s*$")
_THRESH_KEYS = ("lnr", "lcr", "lnc", "unc", "ucr", "unr")
_VERBOSE_THRESH = {
    "lower non-recoverable": "lnr",
    "lower critical": "lcr",
    "lower non-critical": "lnc",
    "upper non-critical": "unc",
    "upper critical": "ucr",
    "upper non-recoverable": "unr",
}


@dataclass
class IpmiReading:
    """One sensor as ipmitool printed it (value in ``unit``; NaN when there is none)."""

    name: str
    value: float
    unit: str  # normalised: "C", "W", "V", "A", "RPM", "%", "discrete", "" …
    status: str  # ok, ns, na, nc, cr, nr, or a hex state word for discrete sensors
    sensor_number: int = -1
    entity: str = ""  # "7.1" (entity id . instance)
    state: str = ""  # state text of discrete sensors ("Presence detected", "0x01")
    thresholds: dict[str, float] = field(default_factory=dict)


def _value_unit(text: str) -> tuple[float, str, str]:
    """``"25 degrees C"`` → (25, "C", ""); ``"110 Watts, Presence detected"`` → (110, "W", "Presence detected")."""
    t = text.strip()
    if t.lower() in _NO_VALUE:
        return math.nan, "", t
    if t.lower().startswith("0x"):
        return math.nan, "discrete", t
    m = _NUM_UNIT.match(t)
    if m is None:
        return math.nan, "discrete", t
    unit = m.group(2).strip()
    if unit.lower() == "discrete":
        return math.nan, "discrete", t
    return float(m.group(1)), normalise_unit(unit), (m.group(3) or "").strip()


def _float_or_nan(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def _parse_verbose(block: list[str]) -> IpmiReading | None:
    m = _VERBOSE_ID.match(block[0].strip())
    if m is None:
        return None
    r = IpmiReading(m.group(1), math.nan, "", "", int(m.group(2), 16))
    for line in block[1:]:
        if ":" not in line:
            continue
        key, _, val = line.partition(":")
        key, val = key.strip().lower(), val.strip()
        if key == "entity id":
            r.entity = val.split(" ", 1)[0]
        elif key == "sensor reading":
            r.value, r.unit, r.state = _value_unit(val)
            if r.unit == "discrete":
                r.value = math.nan
        elif key == "status":
            r.status = val.lower()
        elif key in _VERBOSE_THRESH:
            r.thresholds[_VERBOSE_THRESH[key]] = _float_or_nan(val)
        elif key.startswith("sensor type (discrete)"):
            r.unit = "discrete"
    if r.status == "disabled":
        r.status = "ns"
    return r


def parse_ipmitool(text: str, counts: IngestCounts | None = None) -> list[IpmiReading]:
    """Parse ``sdr elist`` / ``sdr list`` / ``sensor`` / ``sdr -v`` output (mixed is fine)."""
    counts = counts if counts is not None else IngestCounts()
    out: list[IpmiReading] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        i += 1
        if not stripped:
            continue
        counts.lines += 1
        if stripped.startswith("Sensor ID"):
            block = [stripped]
            while i < len(lines) and lines[i].strip():
                block.append(lines[i])
                i += 1
            r = _parse_verbose(block)
            if r is None:
                counts.malformed_lines += 1
            else:
                out.append(r)
            continue
        cols = [c.strip() for c in line.split("|")]
        r = _parse_columns(cols)
        if r is None:
            counts.malformed_lines += 1
            log.debug("ipmi: unparsable line %r", line)
            continue
        out.append(r)
    return out


def _parse_columns(cols: list[str]) -> IpmiReading | None:
    if not cols[0]:
        return None
    if len(cols) == 5 and _SENSOR_NO.match(cols[1]):  # sdr elist
        value, unit, state = _value_unit(cols[4])
        return IpmiReading(cols[0], value, unit, cols[2].lower(), int(cols[1][:-1], 16), cols[3], state)
    if len(cols) == 3:  # sdr list
        value, unit, state = _value_unit(cols[1])
        return IpmiReading(cols[0], value, unit, cols[2].lower(), state=state)
    if len(cols) == 10:  # sensor
        unit = normalise_unit(cols[2])
        thresholds = {k: _float_or_nan(v) for k, v in zip(_THRESH_KEYS, cols[4:10]) if v.lower() != "na"}
        if unit.lower() == "discrete":
            return IpmiReading(cols[0], math.nan, "discrete", cols[3].lower(), state=cols[1], thresholds=thresholds)
        return IpmiReading(cols[0], _float_or_nan(cols[1]), unit, cols[3].lower(), thresholds=thresholds)
    return None


def to_samples(readings: list[IpmiReading], host: str, counts: IngestCounts | None = None) -> SampleBatch:
    """Readings of one BMC → samples of the node ``host`` (GPU, PSU and node sensors).

    Sensors with no canonical counterpart, discrete sensors, and readings whose unit
    differs from the rule's are counted in ``unmapped_series``; a mapped sensor without
    a reading (``ns``, ``No Reading``) becomes a NaN sample.
    """
    b = BatchBuilder("ipmi")
    if counts is not None:
        b.counts.merge(counts)
    for r in readings:
        m = match_sensor(r.name)
        if m is None or r.unit == "discrete":
            b.unmapped(r.name)
            continue
        if r.unit and r.unit != m.unit:
            b.unmapped(f"{r.name} [{r.unit}]")
            continue
        value = r.value if r.status not in ("ns", "na") else math.nan
        if m.kind == "node":
            b.add("node", host, m.canonical, value, name=r.name)
        else:
            b.add(m.kind, host, m.canonical, value, index=m.index)
    return b.build()


def parse_ipmi(text: str, host: str) -> SampleBatch:
    """ipmitool text of one BMC → normalised samples for node ``host``."""
    counts = IngestCounts()
    return to_samples(parse_ipmitool(text, counts), host, counts)


# --- thin fetcher ---------------------------------------------------------------------
@dataclass(frozen=True)
class IpmiTarget:
    """``ipmi://user:password@host:port`` → where and how to reach a BMC."""

    host: str
    port: int = 623
    user: str = "admin"
    password: str = ""

    @classmethod
    def from_url(cls, url: str) -> IpmiTarget:
        u = urlparse(url)
        if u.scheme != "ipmi" or not u.hostname:
            raise ValueError(f"not an IPMI target {url!r}: expected ipmi://user:password@host[:port]")
        return cls(u.hostname, u.port or 623, unquote(u.username or "admin"), unquote(u.password or ""))

    def __str__(self) -> str:
        return f"ipmi://{self.user}@{self.host}:{self.port}"


def ipmitool_command(
    target: IpmiTarget, args: tuple[str, ...] = ("sdr", "elist"), binary: str = "ipmitool"
) -> list[str]:
    """The argv of one ipmitool call (password via ``-E`` / ``IPMI_PASSWORD``)."""
    return [
        binary,
        "-I",
        "lanplus",
        "-C",
        "3",
        "-H",
        target.host,
        "-p",
        str(target.port),
        "-U",
        target.user,
        "-E",
        *args,
    ]


class IpmiError(RuntimeError):
    """An ipmitool call failed after ``attempts`` tries (or could not start at all: 0)."""

    def __init__(self, message: str, attempts: int) -> None:
        super().__init__(message)
        self.attempts = attempts


def run_ipmitool(
    target: IpmiTarget,
    args: tuple[str, ...] = ("sdr", "elist"),
    *,
    timeout_s: float = 15.0,
    retries: int = 1,
    backoff_s: float = 0.5,
    deadline_s: float | None = None,
    sleep=time.sleep,
) -> tuple[str, int]:
    """Run ipmitool; returns ``(stdout, attempts)``.  Raises :class:`IpmiError` naming the cause.

    Each attempt is killed after ``timeout_s``; ``deadline_s`` bounds all attempts and
    back-off sleeps together (no retry starts when the time is used up).
    """
    binary = shutil.which("ipmitool")
    if binary is None:
        raise IpmiError("ipmitool not found on PATH (Debian package: ipmitool)", 0)
    env = {**os.environ, "IPMI_PASSWORD": target.password}
    end_s = math.inf if deadline_s is None else time.monotonic() + deadline_s
    cause = ""
    attempts = 0
    for attempt in range(retries + 1):
        attempts = attempt + 1
        budget_s = max(min(timeout_s, end_s - time.monotonic()), 0.01)
        try:
            proc = subprocess.run(
                ipmitool_command(target, args, binary), capture_output=True, text=True, timeout=budget_s, env=env
            )
        except subprocess.TimeoutExpired:
            cause = f"ipmitool timed out after {budget_s:.3g} s"
        else:
            if proc.returncode == 0 and proc.stdout.strip():
                return proc.stdout, attempts
            cause = f"ipmitool exited {proc.returncode}: {(proc.stderr or proc.stdout).strip()[:200]}"
        if attempt < retries:
            delay = backoff_s * 2**attempt
            if end_s - time.monotonic() - delay < 0.05:
                break
            sleep(delay)
    raise IpmiError(f"{target} {' '.join(args)} failed after {attempts} attempt(s): {cause}", attempts)


def fetch_ipmi(target: IpmiTarget | str, host: str | None = None, **kw) -> FetchResult:
    """Read a BMC's SDR (``sdr elist``) and normalise it for node ``host``; never raises."""
    t = IpmiTarget.from_url(target) if isinstance(target, str) else target
    t0 = time.monotonic()
    try:
        text, attempts = run_ipmitool(t, **kw)
    except IpmiError as exc:
        log.debug("ipmi: %s", exc)
        return failed("ipmi", str(t), str(exc), exc.attempts, time.monotonic() - t0)
    batch = parse_ipmi(text, host or t.host)
    return judged(FetchResult("ipmi", str(t), True, batch, attempts, "", time.monotonic() - t0))
