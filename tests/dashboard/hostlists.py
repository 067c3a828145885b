"""Expand a Slurm hostlist back into hostnames, to check :func:`dashboard.analysis.hostlist.compress` round trips."""

from __future__ import annotations

import re


def expand(hostlist: str) -> list[str]:
    """The hostnames of a hostlist written by :func:`dashboard.analysis.hostlist.compress` (for tests and round trips)."""
    hosts = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?", hostlist):
        match = re.match(r"^(.*)\[(.*)\]$", part)
        if not match:
            hosts.append(part)
            continue
        prefix, body = match.groups()
        for item in body.split(","):
            lo, _, hi = item.partition("-")
            for value in range(int(lo), int(hi or lo) + 1):
                hosts.append(f"{prefix}{value:0{len(lo)}d}")
    return hosts
