"""Property: ``clustertwin throughput`` on any job file prints strict JSON (exit 0) or one error line (exit 2).

Inputs are mutations of a reference job file, arbitrary text and arbitrary bytes
(see ``tests/twin/fuzzing.py``; ``CLUSTERTWIN_FUZZ_EXAMPLES`` sets how many).
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
import tomllib
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tests.twin.fuzzing import FUZZ_SETTINGS, bounded, mutated, raw_texts, toml_text
from twin.cli import EXIT_BAD_INPUT, main

JOBS_DIR = Path(__file__).resolve().parents[3] / "data" / "jobs"
JOB_DOC = tomllib.loads((JOBS_DIR / "demo-70b-1k.toml").read_text())
SCRATCH = Path(tempfile.mkdtemp(prefix="job-fuzz-"))


def _refuse_constant(token):
    raise ValueError(f"not JSON: {token}")


def throughput(data: bytes) -> None:
    """Run the command on a job file holding ``data``; any exception other than exit 0/2 fails."""
    path = SCRATCH / "fuzz.toml"
    path.write_bytes(data)
    out, err = io.StringIO(), io.StringIO()
    with bounded(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["throughput", "--job", str(path), "--json"])
    if code == 0:
        report = json.loads(out.getvalue(), parse_constant=_refuse_constant)
        assert report["n_gpus"] >= 1 and report["step_time_s"] is not None and report["step_time_s"] > 0
    else:
        assert code == EXIT_BAD_INPUT and out.getvalue() == ""
        assert err.getvalue().startswith("error: ") and err.getvalue().count("\n") == 1, err.getvalue()


def test_the_unmutated_job_runs():
    throughput(toml_text(JOB_DOC).encode())


@FUZZ_SETTINGS
@given(mutated(JOB_DOC))
@example({**JOB_DOC, "reliability": {"failures_per_1000_node_days": 0}})
@example({**JOB_DOC, "hardware": {**JOB_DOC["hardware"], "nic_gbps_per_gpu": float("nan")}})
@example({**JOB_DOC, "hardware": {**JOB_DOC["hardware"], "peak_tflops": 1e308}})
@example({**JOB_DOC, "fabric": {**JOB_DOC["fabric"], "oversubscription": float("inf")}})
@pytest.mark.slow
def test_mutated_job_files(doc):
    throughput(toml_text(doc).encode())


@FUZZ_SETTINGS
@given(raw_texts())
@pytest.mark.slow
def test_arbitrary_text(text):
    throughput(text.encode("utf-8", "surrogatepass"))


@FUZZ_SETTINGS
@given(st.binary(max_size=300))
@example(b"x = " + b"[" * 100_000 + b"]" * 100_000)
@example(b'name = "caf\xe9"\n')
@pytest.mark.slow
def test_arbitrary_bytes(data):
    throughput(data)
