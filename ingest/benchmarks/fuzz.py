"""``fuzz`` benchmark: the property tests of every ingest parser at a larger scale, inputs/s per parser.

Runs each entry of :data:`ingest.benchmarks.fuzz_inputs.FUZZ_SET` on ``examples``
generated inputs (default ``$CLUSTERTWIN_FUZZ_EXAMPLES`` or 500) and reports, per
parser, the inputs checked per second of parsing and the slowest single input.  A
property failure fails the benchmark with hypothesis' minimal counter-example.  Needs
the ``test`` extra (hypothesis).
"""

from __future__ import annotations

import os
import time

from twin.bench import benchmark

DEFAULT_EXAMPLES = 500


@benchmark("fuzz")
def fuzz_benchmark(examples: int | None = None) -> dict:
    """Inputs/s and slowest input (ms) per parser over ``examples`` generated inputs each."""
    try:
        from hypothesis import HealthCheck, given, settings
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise RuntimeError("the fuzz benchmark needs hypothesis: pip install -e '.[test]'") from exc
    from ingest.benchmarks.fuzz_inputs import FUZZ_SET

    n = examples or int(os.environ.get("CLUSTERTWIN_FUZZ_EXAMPLES", DEFAULT_EXAMPLES))
    out: dict[str, float | int] = {"examples_per_parser": n}
    for name, (strategy, prop) in sorted(FUZZ_SET.items()):
        spent = _time_property(strategy, prop, n, given, settings, HealthCheck)
        out[f"{name}_inputs"] = spent["n"]
        out[f"{name}_inputs_per_s"] = round(spent["n"] / max(spent["s"], 1e-9))
        out[f"{name}_slowest_input_ms"] = round(spent["max_s"] * 1e3, 2)
        out[f"{name}_wall_s"] = round(spent["wall_s"], 2)
    return out


def _time_property(strategy, prop, n: int, given, settings, health_check) -> dict:
    """Run ``prop`` on ``n`` inputs from ``strategy``; seconds inside ``prop``, slowest input, wall time."""
    spent = {"s": 0.0, "n": 0, "max_s": 0.0}

    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(health_check))
    @given(strategy)
    def run(value):
        t0 = time.perf_counter()
        prop(value)
        dt = time.perf_counter() - t0
        spent["s"] += dt
        spent["n"] += 1
        spent["max_s"] = max(spent["max_s"], dt)

    wall0 = time.perf_counter()
    run()
    spent["wall_s"] = time.perf_counter() - wall0
    return spent
