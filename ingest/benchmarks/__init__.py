"""Ingest benchmarks (parse throughput, live twin, parser fuzzing); importing registers them."""

from ingest.benchmarks import fuzz, live, parse  # noqa: F401
