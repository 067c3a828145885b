"""The fleet: many jobs of many teams sharing one site through a queue and a scheduler.

Layer order ``site → physics → training → fleet → engine → scenario → commands``: this
package imports the site tables, the physics and the training models, never the engine,
scenarios or commands.  Everything here is pure (numpy and dataclasses, no I/O): traces and
workload files are read by ``ingest/workload``.

* :mod:`twin.fleet.workload` — jobs and their struct-of-arrays table;
* :mod:`twin.fleet.cluster` — node and GPU state, the per-GPU job index;
* :mod:`twin.fleet.topology` / :mod:`twin.fleet.placement` — fabric domains and gang placement
  (flat, tree, block);
* :mod:`twin.fleet.policy` — ordering, backfill, quotas, limits, preemption, power admission;
* :mod:`twin.fleet.priority`, :mod:`twin.fleet.quotas`, :mod:`twin.fleet.backfill` — their pieces;
* :mod:`twin.fleet.scheduler` — one scheduling pass;
* :mod:`twin.fleet.failures`, :mod:`twin.fleet.power` — node failures and power-aware admission;
* :mod:`twin.fleet.simulate`, :mod:`twin.fleet.metrics` — the event-driven simulation and its figures.
"""
