"""Ingest benchmarks (parse throughput, live twin, alert churn, parser fuzzing, Slurm reads); importing registers them."""

from ingest.benchmarks import alert_rows, fuzz, live, parse, slurm, slurm_predict  # noqa: F401
