"""What every importer shares: bounded reads, the skipped-row tally, and the import result."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from twin.errors import InputError
from twin.fleet.workload import FleetJob

MAX_BYTES = 1 << 30  # 1 GiB: the largest trace a read accepts (Helios' full log is ~300 MB)
MAX_ROWS = 5_000_000  # rows a read accepts (Helios: 3.4 M jobs)
MAX_REASONS = 5  # first reasons kept for skipped rows


class WorkloadInputError(InputError):
    """A trace or workload file that cannot be read at all (one line: file and problem)."""


@dataclass
class ImportResult:
    """Jobs read from a trace, and what was skipped."""

    source: str
    jobs: list[FleetJob] = field(default_factory=list)
    skipped_count: int = 0
    skipped_reasons: list[str] = field(default_factory=list)
    rows_count: int = 0
    quotas: list[tuple[float, str, int]] = field(default_factory=list)  # (time, team, nominal GPUs)
    notes: list[str] = field(default_factory=list)

    def skip(self, where: str, why: str) -> None:
        """Count one bad row; keep the first few reasons."""
        self.skipped_count += 1
        if len(self.skipped_reasons) < MAX_REASONS:
            self.skipped_reasons.append(f"{where}: {why}")

    def summary(self) -> dict:
        return {
            "source": self.source,
            "rows_count": self.rows_count,
            "jobs_count": len(self.jobs),
            "skipped_count": self.skipped_count,
            "skipped_reasons": list(self.skipped_reasons),
            "quota_changes_count": len(self.quotas),
            "notes": list(self.notes),
        }


def read_capped(path: Path | str, max_bytes: int = MAX_BYTES) -> bytes:
    """The bytes of ``path``, refusing files larger than ``max_bytes`` (one-line errors)."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except FileNotFoundError:
        raise WorkloadInputError(f"{p}: file not found") from None
    except IsADirectoryError:
        raise WorkloadInputError(f"{p}: is a directory, not a file") from None
    except OSError as exc:
        raise WorkloadInputError(f"{p}: cannot read: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise WorkloadInputError(f"{p}: larger than {max_bytes // (1 << 20)} MiB (the import size cap)")
    return data


def text_lines(data: bytes, res: ImportResult, max_rows: int = MAX_ROWS) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of ``data`` decoded as UTF-8 (bad bytes replaced and counted in notes)."""
    text = data.decode("utf-8", errors="replace")
    if "\ufffd" in text:
        res.notes.append("invalid UTF-8 bytes replaced")
    for n, line in enumerate(text.splitlines(), 1):
        if n > max_rows:
            res.notes.append(f"stopped at the row cap of {max_rows:,} rows")
            return
        yield n, line


def finite_float(text: str) -> float:
    """``float(text)`` that refuses NaN and infinities (ValueError)."""
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"not a finite number: {text!r}")
    return value
