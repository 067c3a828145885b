"""Slurm's spellings → ClusterTwin's: states, numbers, durations, times, TRES/GRES, dependencies.

Every Slurm reader converts through these functions, so the vendor vocabulary lives in
one module.  They accept the forms of every Slurm release the readers meet:

* numbers: plain JSON numbers (22.05), ``{"set", "infinite", "number"}`` objects
  (data_parser v0.0.39+, Slurm 23.02 and later), ``"Infinity"``/``null`` (``+complex``);
* job states: ``"RUNNING"`` (22.05), ``["PENDING", "REQUEUED"]`` (23.02+), short codes
  (``PD``, ``CG``), ``CANCELLED by 1185300516`` (sacct);
* node states: ``"idle"`` plus ``state_flags`` (22.05 JSON), ``["IDLE", "DRAIN"]`` (23.02+),
  ``IDLE+DRAIN`` (scontrol), ``drained*`` (sinfo's long names with their suffixes);
* durations: ``[days-]hours:minutes:seconds``, ``minutes:seconds``, minutes, ``UNLIMITED``;
* times: Unix seconds, or ISO 8601 without a zone in the controller's time zone.
"""

from __future__ import annotations

import functools
import math
import re
from datetime import UTC, datetime, tzinfo

from ingest.sources.slurm_records import JOB_STATES, NODE_STATES

_NOTHING_TEXT = frozenset({"(null)", "none", "n/a"})
_UNSET_TEXT = frozenset({"", "n/a", "none", "(null)", "unknown", "not_set", "0"})
_UNLIMITED_TEXT = frozenset({"unlimited", "infinite", "infinity", "partition_limit"})

_JOB_CODES = {
    "PD": "pending",
    "R": "running",
    "S": "suspended",
    "CG": "completing",
    "CD": "completed",
    "CA": "cancelled",
    "F": "failed",
    "TO": "timeout",
    "NF": "node_fail",
    "PR": "preempted",
    "BF": "boot_fail",
    "DL": "deadline",
    "OOM": "out_of_memory",
    "RQ": "requeued",
    "COMPLETE": "completed",
}
_JOB_NAMES = {s.upper(): s for s in JOB_STATES}

_NODE_BASE = {
    "IDLE": "idle",
    "ALLOCATED": "allocated",
    "ALLOC": "allocated",
    "MIXED": "mixed",
    "MIX": "mixed",
    "DOWN": "down",
    "FUTURE": "future",
    "UNKNOWN": "unknown",
    "ERROR": "unknown",
    "COMPLETING": "completing",
    "COMP": "completing",
}
# sinfo's long state names (``%T``) that combine a base state and flags
_NODE_LONG = {
    "drained": ("idle", ("drain",)),
    "drain": ("idle", ("drain",)),
    "draining": ("allocated", ("drain",)),
    "drng": ("allocated", ("drain",)),
    "fail": ("idle", ("fail",)),
    "failing": ("allocated", ("fail",)),
    "maint": ("idle", ("maintenance",)),
    "reserved": ("idle", ("reserved",)),
    "resv": ("idle", ("reserved",)),
    "planned": ("idle", ("planned",)),
    "powered_down": ("idle", ("powered_down",)),
    "power_down": ("idle", ("power_down",)),
    "powering_down": ("idle", ("powering_down",)),
    "powering_up": ("idle", ("powering_up",)),
    "reboot_issued": ("idle", ("reboot_issued",)),
    "reboot_requested": ("idle", ("reboot_requested",)),
    "inval": ("unknown", ("invalid_reg",)),
    "blocked": ("idle", ("blocked",)),
}
_SINFO_SUFFIX = {
    "*": "not_responding",
    "~": "powered_down",
    "#": "powering_up",
    "!": "power_down",
    "%": "powering_down",
    "$": "maintenance",
    "@": "reboot_requested",
    "^": "reboot_issued",
    "-": "planned",
}
_DURATION = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+(?:\.\d*)?))?$")
_GRES_GPU = re.compile(r"^(?:gres[:/])?gpu(?::([^:(=]+))?(?::|=)(\d+)")
_DEP_ID = re.compile(r"(\d+)")
_USER_ID = re.compile(r"^(.*?)\((\d+)\)$")


def number(value) -> float | None:
    """A Slurm number in any release's form: ``None`` when unset, ``inf`` when infinite."""
    if type(value) is int or type(value) is float:  # the common case first (22.05 numbers)
        return float(value)
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, dict):
        if value.get("infinite"):
            return math.inf
        if not value.get("set", "number" in value):
            return None
        return number(value.get("number"))
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _UNLIMITED_TEXT:
            return math.inf
        try:
            return float(text)
        except ValueError:
            return None
    return None


def integer(value, default: int = 0) -> int:
    """:func:`number` as an ``int`` (``default`` when unset, infinite, or beyond Slurm's NO_VAL)."""
    if type(value) is int and 0 <= value < 0xFFFFFFFE:
        return value
    v = number(value)
    if v is None or not math.isfinite(v) or v >= 0xFFFFFFFE:
        return default
    return int(v)


def job_state(value) -> tuple[str, tuple[str, ...]]:
    """Slurm job state (string, list, code or ``CANCELLED by UID``) → (state, flags)."""
    return _job_state(tuple(str(v) for v in value) if isinstance(value, list) else str(value or ""))


@functools.lru_cache(maxsize=1024)
def _job_state(value: tuple[str, ...] | str) -> tuple[str, tuple[str, ...]]:
    if isinstance(value, tuple):
        words = list(value)
    else:
        words = re.split(r"\s+by\s+", value, maxsplit=1, flags=re.I)[0].replace("+", " ").split()
    state, flags = "unknown", []
    for word in words:
        w = word.strip().upper()
        named = _JOB_NAMES.get(w) or _JOB_CODES.get(w)
        if named and state == "unknown":
            state = named
        elif w:
            flags.append(w.lower())
    if "completing" in flags:
        state = "completing"
    return state, tuple(dict.fromkeys(f for f in flags if f != state))


def node_state(value, extra_flags=()) -> tuple[str, tuple[str, ...]]:
    """Slurm node state in any form → (ClusterTwin state, flags)."""
    words = tuple(str(v) for v in value) if isinstance(value, list) else tuple(str(value or "").split("+"))
    return _node_state(words, tuple(str(f) for f in extra_flags))


@functools.lru_cache(maxsize=1024)
def _node_state(words: tuple[str, ...], extra_flags: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    base, flags = "unknown", [str(f).lower() for f in extra_flags]
    for i, raw in enumerate(words):
        w = raw.strip()
        while w and w[-1] in _SINFO_SUFFIX:
            flags.append(_SINFO_SUFFIX[w[-1]])
            w = w[:-1]
        upper, lower = w.upper(), w.lower()
        if i == 0 and upper in _NODE_BASE:
            base = _NODE_BASE[upper]
        elif i == 0 and lower in _NODE_LONG:
            base, more = _NODE_LONG[lower]
            flags.extend(more)
        elif lower:
            flags.append("maintenance" if lower == "maint" else lower)
    return _combined_node_state(base, tuple(dict.fromkeys(flags)))


def _combined_node_state(base: str, flags: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """sinfo's rules: a drained idle node is ``drained``, a draining busy one ``draining`` …"""
    busy = base in ("allocated", "mixed", "completing")
    state = base
    if base == "down":
        state = "down"
    elif "drain" in flags:
        state = "draining" if busy else "drained"
    elif "fail" in flags:
        state = "failing" if busy else "fail"
    elif "maintenance" in flags and not busy:
        state = "maint"
    elif "powered_down" in flags and not busy:
        state = "powered_down"
    elif "reserved" in flags and not busy:
        state = "reserved"
    elif "completing" in flags and base != "completing":
        state = "completing" if base == "idle" else base
    return (state if state in NODE_STATES else "unknown"), flags


def duration_s(text, minutes_if_bare: bool = True) -> float | None:
    """``3-00:00:00``, ``1:00:00``, ``5:00`` (min:s), ``60`` (minutes) → seconds; ``None`` if unlimited or unset."""
    if text is None:
        return None
    if not isinstance(text, str):
        v = number(text)
        return None if v is None or not math.isfinite(v) else v * (60.0 if minutes_if_bare else 1.0)
    t = text.strip()
    if t.lower() in _UNLIMITED_TEXT or t.lower() in ("", "n/a", "none", "(null)"):
        return None
    m = _DURATION.match(t)
    if m is None:
        return None
    days, a, b, c = m.groups()
    d = int(days or 0) * 86400.0
    if b is None and c is None:  # "N" or "D-H"
        return d + (int(a) * 3600.0 if days else int(a) * (60.0 if minutes_if_bare else 1.0))
    if c is None:  # "M:S" or "D-H:M"
        return d + (int(a) * 3600.0 + int(b) * 60.0 if days else int(a) * 60.0 + int(b))
    return d + int(a) * 3600.0 + int(b) * 60.0 + float(c)


def timestamp(value, tz: tzinfo = UTC) -> datetime | None:
    """Unix seconds (0 = unset) or ISO 8601 text in zone ``tz`` → an aware UTC ``datetime``."""
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in _UNSET_TEXT:
            return None
        try:
            t = datetime.fromisoformat(text)
        except ValueError:
            v = number(text)
            return _from_unix(v)
        return (t if t.tzinfo else t.replace(tzinfo=tz)).astimezone(UTC)
    return _from_unix(number(value))


def _from_unix(v: float | None) -> datetime | None:
    if v is None or not math.isfinite(v) or v <= 0 or v >= 0xFFFFFFFE:
        return None
    return datetime.fromtimestamp(v, UTC)


def split_outside(text: str, sep: str = ",") -> list[str]:
    """Split at ``sep`` outside parentheses and brackets: ``gpu:8(IDX:0-3,5),nic:1`` → 2 parts."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(depth - 1, 0)
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def gres_gpus(text) -> tuple[int, str]:
    """GPUs in a GRES or per-node TRES string → (count, type): ``gpu:h100:8(IDX:0-7)`` → (8, "h100")."""
    if not isinstance(text, str):
        return 0, ""
    return _gres_gpus(text)


@functools.lru_cache(maxsize=4096)  # a site has a handful of distinct GRES strings, seen once per node
def _gres_gpus(text: str) -> tuple[int, str]:
    total, kind = 0, ""
    for part in split_outside(text):
        m = _GRES_GPU.match(part.strip().lower())
        if m:
            total += int(m.group(2))
            kind = kind or (m.group(1) or "")
    return total, kind


_GRES_IDX = re.compile(r"IDX:([^)]*)\)")
MAX_GPU_INDEX = 1023  # no node has more GPUs; a larger index is a malformed string


def gres_gpu_indices(text) -> tuple[int, ...]:
    """GPU indices a node's GRES detail names: ``gpu:h100:3(IDX:0-2,5)`` → (0, 1, 2, 5); ``()`` when none or malformed."""
    if not isinstance(text, str):
        return ()
    return _gres_gpu_indices(text)


@functools.lru_cache(maxsize=4096)
def _gres_gpu_indices(text: str) -> tuple[int, ...]:
    out: list[int] = []
    for part in split_outside(text):
        if not _GRES_GPU.match(part.lower()):
            continue
        m = _GRES_IDX.search(part)
        if m is None:
            continue
        for item in m.group(1).split(","):
            lo, _, hi = item.strip().partition("-")
            if not lo.isdigit() or (hi and not hi.isdigit()):
                continue  # N/A, or not a range
            a, b = int(lo), int(hi or lo)
            if a <= b <= MAX_GPU_INDEX:
                out.extend(range(a, b + 1))
    return tuple(dict.fromkeys(out))


def tres(text) -> dict[str, str]:
    """``cpu=24,node=1,gres/gpu=2`` → {"cpu": "24", "node": "1", "gres/gpu": "2"}."""
    out: dict[str, str] = {}
    if not isinstance(text, str):
        return out
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if sep:
            out[key.strip().lower()] = value.strip()
    return out


def tres_gpus(text) -> int:
    """GPUs in a TRES string: ``gres/gpu=N``, else the sum of typed ``gres/gpu:TYPE=N`` entries."""
    if not isinstance(text, str) or "gres/gpu" not in text:
        return 0
    t = tres(text)
    if "gres/gpu" in t:
        return integer(t["gres/gpu"])
    return sum(integer(v) for k, v in t.items() if k.startswith("gres/gpu:"))


def dependency_ids(text) -> tuple[int, ...]:
    """Job ids named by a dependency (``afterok:12:13,afterany:14_*(failed)``); ``()`` for none."""
    if not isinstance(text, str) or text.strip().lower() in ("", "(null)", "none"):
        return ()
    ids: list[int] = []
    for clause in re.split(r"[,?]", text):
        _, _, rest = clause.partition(":")
        for token in rest.split(":"):
            m = _DEP_ID.match(token.strip())
            if m:
                ids.append(int(m.group(1)))
    return tuple(dict.fromkeys(ids))


DEPENDENCY_KINDS = ("after", "afterany", "afterburstbuffer", "aftercorr", "afternotok", "afterok", "singleton")


def dependency_clauses(text) -> tuple[tuple[str, tuple[int, ...], str], ...]:
    """A dependency → ((kind, job ids, status), …): ``afterok:12:13(unfulfilled),singleton`` →
    (("afterok", (12, 13), "unfulfilled"), ("singleton", (), "")).

    ``?`` (any of) is read as ``,`` (all of); a kind Slurm does not have is kept as written.
    An array reference ``12_*`` or ``12_4`` names job 12.
    """
    if not isinstance(text, str) or text.strip().lower() in ("", "(null)", "none"):
        return ()
    out = []
    for clause in re.split(r"[,?&]", text):
        clause = clause.strip()
        status = ""
        m = re.search(r"\((\w+)\)\s*$", clause)
        if m:
            status, clause = m.group(1).lower(), clause[: m.start()]
        kind, _, rest = clause.partition(":")
        ids = tuple(int(i.group(1)) for i in (_DEP_ID.match(t.strip()) for t in rest.split(":") if t.strip()) if i)
        if kind.strip():
            out.append((kind.strip().lower(), ids, status))
    return tuple(out)


def user_name(text) -> str:
    """``root(0)`` → ``root``; ``(null)``/``Unknown`` → ``""``."""
    if not isinstance(text, str):
        return ""
    t = text.strip()
    m = _USER_ID.match(t)
    if m:
        t = m.group(1)
    return "" if t.lower() in ("(null)", "unknown", "n/a", "none") else t


def text_value(value) -> str:
    """A Slurm text field with its 'nothing' spellings (``(null)``, ``None``, ``N/A``) as ``""``."""
    if value is None:
        return ""
    t = value.strip() if type(value) is str else str(value).strip()
    return "" if t in _NOTHING_TEXT or t.lower() in _NOTHING_TEXT else t
