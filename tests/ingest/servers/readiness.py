"""Waiting for real peers on a shared, loaded machine: deadlines that scale with load, port ownership.

CI runs the suite on a 2-core machine that other work loads up to a load average of
8-12, where a server takes several times longer to start than on an idle one.  Every
readiness wait therefore polls until a deadline of :func:`load_scaled_s` seconds instead
of sleeping a fixed time.

A port picked as "free" by binding port 0 and closing the socket can be taken by any
other process before the server binds it (another test session on the same machine
starts the same servers).  The server then fails to bind, and a readiness probe on that
port is answered by the other process.  :func:`listening_ports` reads which sockets a
process really holds (Linux ``/proc``), so a fixture can let the server bind port 0 itself
and learn the port, or check that the answering socket is its own.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
MAX_LOAD_FACTOR = 10.0  # a deadline grows at most this many times on a loaded machine
TCP_LISTEN_STATE = "0A"  # st column of /proc/net/tcp for a listening socket
UDP_BOUND_STATE = "07"  # st column of /proc/net/udp for a bound (unconnected) socket


def load_factor() -> float:
    """How many times slower than idle this machine runs now: runnable tasks per core, at least 1."""
    per_core = os.getloadavg()[0] / (os.cpu_count() or 1)
    return min(max(1.0, per_core), MAX_LOAD_FACTOR)


def load_scaled_s(base_s: float) -> float:
    """``base_s`` (the deadline on an idle machine) scaled by :func:`load_factor`, in seconds."""
    return base_s * load_factor()


def poll_until(probe: Callable[[], T], base_s: float, interval_s: float = 0.2) -> T:
    """Call ``probe`` until it returns something true, for up to :func:`load_scaled_s` (``base_s``) seconds.

    Returns the last value of ``probe`` (false when the deadline passed).
    """
    deadline = time.monotonic() + load_scaled_s(base_s)
    while True:
        value = probe()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval_s)


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def listening_ports(pid: int, protocol: str = "tcp") -> set[int]:
    """Ports on 127.0.0.1 that process ``pid`` listens on (tcp) or is bound to (udp); empty once it exited."""
    try:
        mine = _socket_inodes(pid)
        table = Path(f"/proc/{pid}/net/{protocol}").read_text()
    except (FileNotFoundError, ProcessLookupError):  # the process exited
        return set()
    state = TCP_LISTEN_STATE if protocol == "tcp" else UDP_BOUND_STATE
    ports = set()
    for line in table.splitlines()[1:]:
        fields = line.split()
        address, port = fields[1].split(":")
        if fields[3] == state and fields[9] in mine and address in ("0100007F", "00000000"):
            ports.add(int(port, 16))
    return ports
