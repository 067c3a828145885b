"""What a read of Slurm may run: the read-only forms of Slurm's clients, and shims that log every call.

:func:`is_read_only` is the test's own list (not the source's), from the man pages of
Slurm 22.05: ``squeue``, ``sinfo``, ``sacct``, ``sprio``, ``sshare``, ``sdiag`` only read;
``scontrol`` reads with ``show``/``ping``/``version`` (every other verb — ``update``,
``hold``, ``release``, ``requeue``, ``suspend``, ``resume``, ``create``, ``delete``,
``reconfigure``, ``shutdown``, ``reboot``, ``token`` … — changes the controller);
``sacctmgr`` reads with ``show``/``list`` (``-P``/``-n`` options first).  Every other
client (``sbatch``, ``srun``, ``salloc``, ``scancel``, ``strigger``, ``scrontab`` …) writes.

:func:`install_shims` puts a logging wrapper for every Slurm client in a directory: put it
first on ``PATH`` and each call is appended to the log (one line, NUL-separated argv) before
the real binary runs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

CLIENTS = (
    "squeue sinfo sacct sacctmgr scontrol sprio sshare sdiag sstat sreport sbatch srun salloc scancel "
    "strigger scrontab sattach sbcast sh5util"
).split()
READERS = frozenset({"squeue", "sinfo", "sacct", "sprio", "sshare", "sdiag", "sstat", "sreport"})
SCONTROL_READS = frozenset({"show", "ping", "version", "-V", "--version", "help"})
SACCTMGR_READS = frozenset({"show", "list"})


def is_read_only(argv: list[str]) -> bool:
    """Whether one Slurm client call only reads (see the module docstring)."""
    if not argv:
        return False
    name, rest = Path(argv[0]).name, argv[1:]
    verbs = [a for a in rest if not a.startswith("-")]
    if name in READERS:
        return True
    if name == "scontrol":
        words = [a for a in rest if a not in ("-d", "-o", "--details", "--oneliner", "-a", "--all")]
        return bool(words) and words[0] in SCONTROL_READS
    if name == "sacctmgr":
        return bool(verbs) and verbs[0].lower() in SACCTMGR_READS
    return False


def install_shims(directory: Path, log: Path) -> Path:
    """A logging wrapper per Slurm client found on this host, in ``directory`` (returned)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in CLIENTS:
        real = shutil.which(name)
        if real is None:
            continue
        shim = directory / name
        shim.write_text(
            f'#!/bin/sh\nprintf "%s\\0" "{name}" "$@" >> "{log}"\nprintf "\\n" >> "{log}"\nexec "{real}" "$@"\n'
        )
        shim.chmod(0o755)
    return directory


def logged_calls(log: Path) -> list[list[str]]:
    """The calls a shim log holds, each as its argv."""
    if not log.exists():
        return []
    out = []
    for line in log.read_bytes().split(b"\n"):
        if line:
            out.append([a.decode(errors="replace") for a in line.split(b"\0") if a])
    return out
