"""Shared pieces of the property-based tests of the file formats (site, job and scenario TOML).

``CLUSTERTWIN_FUZZ_EXAMPLES`` sets how many inputs each property tries (default 40, modest
enough for ``make test``; e.g. ``CLUSTERTWIN_FUZZ_EXAMPLES=2000`` for a long run).  Every
input must finish within :data:`TIME_LIMIT_S` (a hard alarm, so a hang fails the test).

Inputs are mutations of a real file: its TOML is parsed, one to three values are replaced,
deleted, added or duplicated, and the result is written back as TOML text.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
from datetime import UTC, date, datetime
from datetime import time as dtime

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

FUZZ_EXAMPLES = int(os.environ.get("CLUSTERTWIN_FUZZ_EXAMPLES", "40"))
TIME_LIMIT_S = 30  # per input; the largest site the limits allow builds in a few seconds
FUZZ_SETTINGS = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    derandomize=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class InputHung(AssertionError):
    """One input ran longer than :data:`TIME_LIMIT_S`."""


@contextlib.contextmanager
def bounded(seconds: int = TIME_LIMIT_S):
    """Fail with :class:`InputHung` if the body runs longer than ``seconds`` (main thread only)."""

    def expire(_signum, _frame):
        raise InputHung(f"input took longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# ------------------------------------------------------------------------ TOML writing
def _string(text: str) -> str:
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_value(value) -> str:
    """One TOML value (inline tables and arrays; NaN and infinities as TOML writes them)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (datetime, date, dtime)):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_string(str(k))} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(type(value))


def toml_text(doc: dict) -> str:
    """A whole document: every top-level key as ``key = value`` (tables inline)."""
    return "".join(f"{_string(str(k))} = {toml_value(v)}\n" for k, v in doc.items())


# ------------------------------------------------------------------------ strategies
_texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
_patterns = st.sampled_from(
    [
        "{nope}",
        "{hall}",
        "h{hall}-{row}-{rack}-{slot}",
        "{hall:0999999d}",
        "{",
        "}",
        "{0}",
        "{hall!r}",
        "{slot.real}",
        "{hall:{rack}}",
        "x" * 300,
        "",
    ]
)
_ints = st.one_of(
    st.integers(-2, 20),
    st.sampled_from([0, -1, 2**31, 2**63 - 1, -(2**63), 100_000_000]),
    st.integers(-(2**63), 2**63 - 1),
)
_floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e308, -1e308, 5e-324, float("nan"), float("inf")]),
)
_dates = st.one_of(st.datetimes(timezones=st.just(UTC)), st.datetimes(), st.dates(), st.times())
scalars = st.one_of(_ints, _floats, _texts, _patterns, st.booleans(), _dates)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_texts, inner, max_size=4)),
    max_leaves=8,
)


def _paths(node, prefix=()):
    """Every path (tuple of keys and indexes) into a parsed document, containers included."""
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


def _get(doc, path):
    for key in path:
        doc = doc[key]
    return doc


def _strings(node):
    return [v for p in _paths(node) if isinstance(v := _get(node, p), str)]


@st.composite
def mutated(draw, doc: dict, extra_values=st.nothing()) -> dict:
    """``doc`` (a parsed TOML document, deep-copied) after one to three random edits.

    Edits favour plausible wrongness: a number replaced by another number, a name by another
    name of the same file, a key deleted or added, a list element duplicated; and sometimes
    any value at all.
    """
    import copy

    doc = copy.deepcopy(doc)
    names = _strings(doc)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent, key = _get(doc, path[:-1]), path[-1]
        old = parent[key]
        op = draw(st.sampled_from(["number", "name", "any", "delete", "add", "duplicate"]))
        if op == "number" and isinstance(old, (int, float)) and not isinstance(old, bool):
            scale = 10.0 * min(abs(float(old)), 1e300) + 1.0 if math.isfinite(old) else 1e6
            parent[key] = draw(st.one_of(_ints, _floats, st.floats(-scale, scale)))
        elif op == "name" and isinstance(old, str):
            parent[key] = draw(st.one_of(st.sampled_from(names), _texts, _patterns))
        elif op == "delete":
            del parent[key]
        elif op == "add" and isinstance(old, dict):
            old[draw(st.one_of(_texts, st.sampled_from(sorted({p[-1] for p in paths if isinstance(p[-1], str)}))))] = (
                draw(st.one_of(values, extra_values))
            )
        elif op == "duplicate" and isinstance(old, list) and old:
            old.append(copy.deepcopy(old[draw(st.integers(0, len(old) - 1))]))
        else:
            parent[key] = draw(st.one_of(values, extra_values))
    return doc


def raw_texts():
    """Arbitrary text and TOML-looking fragments, for the parser layer."""
    fragments = st.sampled_from(
        [
            "[site]\n",
            "[[halls]]\n",
            "[conditions]\n",
            "[model]\n",
            "a = 1\n",
            "a = [\n",
            "x = {",
            "]",
            '"',
            "nan",
            "inf",
            "= =",
            "\x00",
            "\ufeff",
            "[a.b.c]\n",
            "a.b = 1\n",
        ]
    )
    return st.one_of(st.text(max_size=200), st.lists(st.one_of(fragments, _texts), max_size=30).map("".join))
