"""Hostnames in Slurm's compressed hostlist form (``node[01-04,07]``), for drain commands.

Slurm writes a set of hosts as prefix + bracketed ranges of the trailing number, keeping
zero padding (``scontrol show hostlist``); this is the form ``scontrol update
NodeName=… State=DRAIN`` accepts.
"""

from __future__ import annotations

import re

_TRAILING_NUMBER = re.compile(r"^(.*?)(\d+)$")


def _ranges(numbers: list[tuple[int, str]]) -> list[str]:
    """Consecutive runs of (value, text) as ``a-b`` or ``a``, keeping each run's zero padding."""
    out = []
    run: list[tuple[int, str]] = []
    for value, text in numbers:
        if run and value == run[-1][0] + 1 and len(text) == len(run[-1][1]):
            run.append((value, text))
            continue
        if run:
            out.append(run[0][1] if len(run) == 1 else f"{run[0][1]}-{run[-1][1]}")
        run = [(value, text)]
    if run:
        out.append(run[0][1] if len(run) == 1 else f"{run[0][1]}-{run[-1][1]}")
    return out


def compress(hostnames: list[str]) -> str:
    """A comma-separated Slurm hostlist of ``hostnames`` (duplicates dropped, sorted)."""
    plain, numbered = set(), {}
    for host in hostnames:
        match = _TRAILING_NUMBER.match(host)
        if match:
            numbered.setdefault(match.group(1), set()).add((int(match.group(2)), match.group(2)))
        else:
            plain.add(host)
    parts = sorted(plain)
    for prefix in sorted(numbered):
        numbers = sorted(numbered[prefix], key=lambda n: (n[0], len(n[1])))
        ranges = _ranges(numbers)
        parts.append(
            f"{prefix}{ranges[0]}" if len(ranges) == 1 and "-" not in ranges[0] else f"{prefix}[{','.join(ranges)}]"
        )
    return ",".join(parts)
