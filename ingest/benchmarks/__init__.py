"""Ingest benchmarks (parse throughput, live twin, live fleet, alert churn, silences on the tick, parser fuzzing,
Slurm reads); importing registers them."""

from ingest.benchmarks import alert_mutes, alert_rows, fleet_live, fuzz, live, parse, slurm, slurm_predict  # noqa: F401
