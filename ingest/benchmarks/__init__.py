"""Ingest benchmarks (parse throughput, live twin, parser fuzzing, Slurm reads); importing registers them."""

from ingest.benchmarks import fuzz, live, parse, slurm, slurm_predict  # noqa: F401
