"""Workloads for the fleet simulation: trace importers, our own workload file and a seeded generator.

Importers turn a vendor's trace into :class:`twin.fleet.workload.FleetJob` records (vendor names
stay here, as everywhere in ``ingest/``): SWF (Parallel Workloads Archive), Slurm ``sacct
--parsable`` dumps, Gavel and Tiresias scheduler traces, Helios per-team GPU quotas, and the
``ct`` workload file (TOML by hand, Parquet for large).  Every read has a size cap and a row
cap; bad rows are skipped with a count and the first reasons.
"""
