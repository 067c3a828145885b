"""Property tests of every ingest parser: any input gives a consistent batch (or a named error), never a traceback.

The inputs come from :mod:`ingest.benchmarks.fuzz_inputs` (structured pieces of each
format mixed with arbitrary text).  Each example must finish within
``FUZZ_DEADLINE_MS``.  The default number of examples keeps ``make test`` quick; set
``CLUSTERTWIN_FUZZ_EXAMPLES`` for a longer run (or ``clustertwin bench --only fuzz``).
"""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings

from ingest.benchmarks.fuzz_inputs import FUZZ_SET

EXAMPLES = int(os.environ.get("CLUSTERTWIN_FUZZ_EXAMPLES", "60"))
FUZZ_DEADLINE_MS = 5000  # per input; typical inputs take a few ms, the slowest of 5,000 ~0.9 s on a loaded machine


def _settings(func):
    return settings(
        max_examples=EXAMPLES,
        deadline=timedelta(milliseconds=FUZZ_DEADLINE_MS),
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )(func)


@pytest.mark.parametrize("name", sorted(FUZZ_SET))
@pytest.mark.slow
def test_parser_never_raises_and_stays_consistent(name):
    strategy, prop = FUZZ_SET[name]

    @_settings
    @given(strategy)
    def run(value):
        prop(value)

    run()


def test_fuzz_benchmark_reports_inputs_per_second_per_parser():
    from ingest.benchmarks.fuzz import fuzz_benchmark

    out = fuzz_benchmark(examples=5)
    for name in FUZZ_SET:
        assert out[f"{name}_inputs"] >= 1 and out[f"{name}_inputs_per_s"] > 0
        assert out[f"{name}_slowest_input_ms"] < FUZZ_DEADLINE_MS
