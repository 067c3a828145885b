"""Read a text file a user names (site, job, scenario): bounded size, UTF-8, one-line errors.

``/dev/zero`` or a 10 GB log given by mistake must not be read into memory, so at most
:data:`MAX_FILE_BYTES` are read; input files are tens of kilobytes (``colossus.toml`` ≈ 60 kB).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

MAX_FILE_BYTES = 16 * 1024 * 1024


def read_text(path: Path, error: Callable[[str], Exception], max_bytes: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of ``path``; problems raise ``error(problem)`` (e.g. "cannot read: No such file")."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except FileNotFoundError:
        raise error("file not found") from None
    except IsADirectoryError:
        raise error("is a directory, not a file") from None
    except OSError as exc:
        raise error(f"cannot read: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise error(f"larger than {max_bytes // (1024 * 1024)} MiB: not an input file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"not UTF-8 text (byte {exc.start})") from None
