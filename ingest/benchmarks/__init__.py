"""Ingest benchmarks (parse throughput, live twin); importing registers them."""

from ingest.benchmarks import live, parse  # noqa: F401
