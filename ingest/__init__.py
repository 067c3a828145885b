"""Ingest: telemetry sources, the live runtime, the synthetic plant and the store.

- :mod:`ingest.sources`    pure parsers of real telemetry formats and their thin fetchers;
- :mod:`ingest.live`       the live hub, its scheduler, pollers, alerts and trend buffer;
- :mod:`ingest.synthetic`  a simulated plant with fault injection, read through noisy sensors;
- :mod:`ingest.store`      relational tables and columnar telemetry frames (SQLite or PostgreSQL).
"""
