"""Slurm hostlists: ``gpu[001-004,007],login1`` ↔ the host names it stands for, bounded.

A hostlist is a comma-separated list of *patterns*; a pattern is text with any number of
bracket groups, each a comma-separated list of numbers and ``lo-hi`` ranges
(``rack[1-2]-n[01-08]`` is the product of its groups, in order).  Zero padding follows
the lower bound of a range, as Slurm and python-hostlist do: ``[01-10]`` gives ``01 … 10``,
``[1-010]`` gives ``1 … 10``.  Brackets do not nest; a comma inside brackets separates
ranges, outside them patterns.

:func:`expand` counts the names a list stands for *before* building any of them and
refuses more than ``max_hosts`` (``node[0-999999999]`` fails at once, in constant memory);
the text itself is capped at ``max_chars``.  :func:`compress` is the inverse for a set of
names: it ranges the last number of each name (``h1-r01-k01-n[0-7]``), keeps each
width, and drops repeats, so ``expand(compress(names))`` holds each name once.
Errors are :class:`HostlistError` (a ``ValueError``) naming the fault.  Pure functions: no
I/O, no state.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_HOSTS = 1 << 20  # a million names: ten colossus campuses (125,440 nodes) eight times over
MAX_CHARS = 1 << 22  # 4 MiB of hostlist text
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
_LAST_NUMBER = re.compile(r"^(.*?)(\d+)(\D*)$")


class HostlistError(ValueError):
    """A hostlist that is malformed or stands for more names than allowed."""


def _split_top(text: str) -> list[str]:
    """Split at commas outside brackets; refuse unbalanced or nested brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            if depth:
                raise HostlistError(f"nested '[' at position {i} of hostlist {text[:80]!r}")
            depth = 1
        elif ch == "]":
            if not depth:
                raise HostlistError(f"']' without '[' at position {i} of hostlist {text[:80]!r}")
            depth = 0
        elif ch == "," and not depth:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise HostlistError(f"'[' without ']' in hostlist {text[:80]!r}")
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _ranges(body: str, pattern: str) -> list[tuple[int, int, int]]:
    """``"001-004,7"`` → [(1, 4, 3), (7, 7, 1)]: (lo, hi, width) per range."""
    out = []
    for item in body.split(","):
        m = _RANGE.match(item.strip())
        if m is None:
            raise HostlistError(f"bad range {item.strip()!r} in {pattern[:80]!r}: expected N or LO-HI")
        lo_text, hi_text = m.group(1), m.group(2) or m.group(1)
        lo, hi = int(lo_text), int(hi_text)
        if hi < lo:
            raise HostlistError(f"range {item.strip()!r} in {pattern[:80]!r} runs backwards")
        out.append((lo, hi, len(lo_text)))
    return out


def _pieces(pattern: str) -> list[str | list[tuple[int, int, int]]]:
    """A pattern as alternating literal text and bracket groups."""
    pieces: list[str | list[tuple[int, int, int]]] = []
    pos = 0
    while True:
        open_at = pattern.find("[", pos)
        if open_at < 0:
            pieces.append(pattern[pos:])
            return pieces
        close_at = pattern.index("]", open_at)
        pieces.append(pattern[pos:open_at])
        pieces.append(_ranges(pattern[open_at + 1 : close_at], pattern))
        pos = close_at + 1


def _group_size(group: list[tuple[int, int, int]]) -> int:
    return sum(hi - lo + 1 for lo, hi, _ in group)


def count(text: str, max_chars: int = MAX_CHARS) -> int:
    """How many names ``text`` stands for (repeats counted), without building them."""
    total = 0
    for pattern in _split_top(_checked(text, max_chars)):
        size = 1
        for piece in _pieces(pattern):
            if not isinstance(piece, str):
                size *= _group_size(piece)
        total += size
    return total


def _checked(text: str, max_chars: int) -> str:
    if len(text) > max_chars:
        raise HostlistError(f"hostlist of {len(text)} characters exceeds the {max_chars}-character cap")
    return text.strip()


def expand(text: str, max_hosts: int = MAX_HOSTS, max_chars: int = MAX_CHARS) -> list[str]:
    """The names of hostlist ``text`` in order (repeats kept); ``[]`` for ``""``, ``"(null)"``, ``"None"``."""
    if text.strip() in ("", "(null)", "None", "N/A"):
        return []
    n = count(text, max_chars)
    if n > max_hosts:
        raise HostlistError(f"hostlist {text[:60]!r} stands for {n} names, more than the cap of {max_hosts}")
    out: list[str] = []
    for pattern in _split_top(text.strip()):
        names = [""]
        for piece in _pieces(pattern):
            if isinstance(piece, str):
                names = [n + piece for n in names]
            else:
                numbers = [f"{i:0{w}d}" for lo, hi, w in piece for i in range(lo, hi + 1)]
                names = [n + s for n in names for s in numbers]
        out.extend(names)
    return out


def _ranged(numbers: list[tuple[int, int]]) -> str:
    """Sorted distinct (value, width) pairs of one width → ``"001-004,007"``."""
    parts = []
    start = prev = numbers[0][0]
    width = numbers[0][1]
    for value, _ in numbers[1:] + [(None, 0)]:
        if value is not None and value == prev + 1:
            prev = value
            continue
        parts.append(f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}")
        if value is not None:
            start = prev = value
    return ",".join(parts)


def compress(names: Iterable[str]) -> str:
    """The shortest-form hostlist of ``names`` (duplicates dropped): ``gpu[001-004,007],login1``.

    Names are grouped by the text around their last number and by its width (zero-padded
    numbers of one width form one group; an unpadded number as long as a padded group's
    width joins it); groups are listed by prefix, suffix and first number.
    """
    plain: set[str] = set()
    groups: dict[tuple[str, str, int], set[int]] = {}
    for name in names:
        if not name:
            continue
        if any(c in name for c in "[],"):
            raise HostlistError(f"host name {name[:80]!r} holds a hostlist character ('[', ']' or ',')")
        m = _LAST_NUMBER.match(name)
        if m is None:
            plain.add(name)
            continue
        prefix, digits, suffix = m.groups()
        width = len(digits) if digits.startswith("0") else 1
        groups.setdefault((prefix, suffix, width), set()).add(int(digits))
    for (prefix, suffix, width), values in list(groups.items()):
        if width > 1 and (prefix, suffix, 1) in groups:
            unpadded = groups[(prefix, suffix, 1)]
            same_length = {v for v in unpadded if len(str(v)) == width}
            values |= same_length
            unpadded -= same_length
    items: list[tuple[tuple, str]] = [((name, "", 0, -1), name) for name in plain]
    for (prefix, suffix, width), values in groups.items():
        if not values:
            continue
        numbers = [(v, width) for v in sorted(values)]
        if len(numbers) == 1:
            text = f"{prefix}{numbers[0][0]:0{width}d}{suffix}"
        else:
            text = f"{prefix}[{_ranged(numbers)}]{suffix}"
        items.append(((prefix, suffix, width, numbers[0][0]), text))
    return ",".join(text for _, text in sorted(items))
