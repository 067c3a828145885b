"""The hour-mean tick and the day-long memory benchmarks run and report what they promise (on demo, briefly)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from twin.bench import registry
from twin.benchmarks.engine import twin_tick_hour


def test_benchmarks_are_registered():
    assert {"twin_tick_hour", "twin_memory_day"} <= set(registry())


@pytest.mark.slow
def test_tick_hour_counts_every_tick_and_compares_with_a_peer(tmp_path):
    from pathlib import Path

    import twin

    source = str(Path(twin.__file__).resolve().parents[1])
    out = twin_tick_hour("demo", ticks=6, block=4, peer_dir=source)  # the same code as its own peer
    assert out["ticks_count"] == 6
    assert 0 < out["tick_hour_mean_ms"] <= out["tick_hour_worst_ms"]
    assert 0 < out["peer_tick_hour_mean_ms"] <= out["peer_tick_hour_worst_ms"]
    assert out["tick_hour_to_peer_ratio"] == pytest.approx(out["tick_hour_mean_ms"] / out["peer_tick_hour_mean_ms"])


@pytest.mark.slow
def test_memory_stays_flat_over_a_simulated_day():
    # in a fresh interpreter: tracemalloc counts every thread, and earlier tests may leave some running
    code = (
        "import json; from twin.benchmarks.engine import twin_memory_day; "
        "print(json.dumps(twin_memory_day('demo', dt_s=900.0, hours=24.0)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["ticks_count"] == 96
    assert abs(out["heap_growth_mb"]) < 1.0  # no per-tick state accumulates
