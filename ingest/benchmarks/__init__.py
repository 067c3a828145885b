"""Ingest benchmarks (parse throughput, live twin, live fleet, alert churn, parser fuzzing, Slurm reads); importing registers them."""

from ingest.benchmarks import alert_rows, fleet_live, fuzz, live, parse, slurm, slurm_predict  # noqa: F401
