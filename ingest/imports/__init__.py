"""Recordings from real systems turned into incidents: MLPerf power logs, nvidia-smi, dcgmi dmon, Prometheus.

Each parser turns its vendor format into one long table of canonical readings
(:data:`ingest.imports.series.COLUMNS`); :func:`ingest.imports.series.series_bundle` maps them
onto a site and resamples them into an incident bundle that replays like a native one.
"""
