"""Ingest benchmarks (parse throughput, live twin, live fleet, parser fuzzing, Slurm reads); importing registers them."""

from ingest.benchmarks import fleet_live, fuzz, live, parse, slurm, slurm_predict  # noqa: F401
