"""Run a read-only command with a hard deadline and an output cap, and fail in one line.

:func:`run_bounded` is to commands what :func:`ingest.sources.http.get` is to HTTP: the
child runs in its own process group; its standard output is read as it comes and the
whole group is killed (SIGKILL) when the output passes ``max_bytes`` or the deadline
``timeout_s`` passes, whichever is first, so neither a hung ``squeue`` nor a 100 MB
answer holds the caller longer or larger than allowed.  Standard error is kept up to
64 KiB for the error line.  Failure raises :class:`CommandError` whose message names the
command and the cause (missing, timed out, too large, exit status with stderr's first line).
"""

from __future__ import annotations

import os
import selectors
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence

STDERR_CAP_BYTES = 64 * 1024
_CHUNK = 1 << 16


class CommandError(RuntimeError):
    """A bounded command failed; ``kind`` is ``missing``, ``timeout``, ``too_large`` or ``exit``."""

    def __init__(self, message: str, kind: str, output: bytes = b"") -> None:
        super().__init__(message)
        self.kind = kind
        self.output = output  # standard output of a command that exited non-zero (within the cap)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _first_line(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace").strip()
    return text.splitlines()[0][:200] if text else ""


def run_bounded(
    argv: Sequence[str],
    *,
    timeout_s: float,
    max_bytes: int,
    env: Mapping[str, str] | None = None,
) -> bytes:
    """Standard output of ``argv`` (bytes); raises :class:`CommandError` naming what went wrong."""
    shown = shlex.join(argv)
    if shutil.which(argv[0], path=(env or os.environ).get("PATH")) is None:
        raise CommandError(f"{shown}: {argv[0]} not found on PATH", "missing")
    deadline = time.monotonic() + timeout_s
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env) if env is not None else None,
        start_new_session=True,
    )
    out, err = bytearray(), bytearray()
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, out)
    sel.register(proc.stderr, selectors.EVENT_READ, err)
    try:
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                _kill_group(proc)
                raise CommandError(f"{shown}: no complete answer within {timeout_s:.3g} s; killed", "timeout")
            for key, _ in sel.select(timeout=left):
                chunk = os.read(key.fd, _CHUNK)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                buf = key.data
                if buf is err:
                    if len(err) < STDERR_CAP_BYTES:
                        err += chunk[: STDERR_CAP_BYTES - len(err)]
                    continue
                buf += chunk
                if len(out) > max_bytes:
                    _kill_group(proc)
                    raise CommandError(
                        f"{shown}: output exceeded the {max_bytes / 2**20:.3g} MiB cap; killed", "too_large"
                    )
        try:
            code = proc.wait(timeout=max(deadline - time.monotonic(), 0.01))
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise CommandError(f"{shown}: did not exit within {timeout_s:.3g} s; killed", "timeout") from None
    finally:
        sel.close()
        proc.stdout.close()
        proc.stderr.close()
        if proc.poll() is None:
            _kill_group(proc)
    if code != 0:
        detail = _first_line(bytes(err)) or _first_line(bytes(out)) or "no message"
        raise CommandError(f"{shown}: exited {code}: {detail}", "exit", bytes(out))
    return bytes(out)
