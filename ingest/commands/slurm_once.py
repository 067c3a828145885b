"""``clustertwin ingest once --source slurm``: read a Slurm cluster once and print jobs and nodes.

``--target`` is ``commands`` (the default: Slurm's clients on this host, ``--slurm-conf``
naming the cluster's ``slurm.conf``), a slurmrestd URL (``http(s)://host:6820`` with
``SLURM_JWT`` in the environment, or ``http+unix://%2Frun%2Fslurmrestd.sock``), or a
directory of recorded outputs (:data:`ingest.sources.slurm.RECORDED_FILES`).  With
``--site`` the Slurm node names are resolved to the site's nodes; unknown ones are counted
and left out.  ``--json`` prints ``{source, target, ok, error, warnings, slurm_version,
read_at, counts, jobs, nodes, partitions, qos, accounts, reservations}``; without it, a
table of jobs and one of nodes, and the counts on stderr.  ``--predict`` (with ``--site``)
adds every pending job's predicted start beside Slurm's own ``expected_start_at``
(:func:`ingest.slurm.predict.predict`: ``prediction`` in the JSON, a table otherwise).
Exit 0 when the jobs and the nodes were read, 1 when the read failed (one line on
stderr), 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys

from ingest.sources.slurm import DEFAULT_MAX_BYTES, SlurmResult, SlurmTarget, read_slurm
from ingest.sources.slurm_records import snapshot_counts, snapshot_json


def add_slurm_arguments(p: argparse.ArgumentParser) -> None:
    """The Slurm options of ``ingest once``."""
    p.add_argument("--slurm-conf", default="", help="slurm.conf of the cluster to read (sets SLURM_CONF)")
    p.add_argument(
        "--slurm-tz",
        default="UTC",
        help="time zone of a recorded text output's times (default UTC; commands run in UTC)",
    )
    p.add_argument(
        "--nodes-from",
        choices=("sinfo", "scontrol"),
        default="sinfo",
        help="node states from sinfo --json (default) or scontrol show node (Slurm without --json)",
    )
    p.add_argument(
        "--accounting",
        choices=("auto", "sacct", "jobcomp", "none"),
        default="auto",
        help="completed jobs from sacct (slurmdbd), the jobcomp file, or not at all (default: what the cluster has)",
    )
    p.add_argument("--jobcomp", default="", help="path of the jobcomp/filetxt file (default: JobCompLoc)")
    p.add_argument(
        "--predict",
        action="store_true",
        help="also predict every pending job's start with the fleet scheduler (needs --site)",
    )
    p.add_argument(
        "--run-times",
        choices=("history", "limit"),
        default="history",
        help="run-time estimates for --predict: the user's last two runs of the job name (default), "
        "or every job's time limit as Slurm plans",
    )
    p.add_argument(
        "--predict-method",
        choices=("auto", "simulate", "plan"),
        default="auto",
        help="--predict by event simulation, by one backfill plan, or the simulation where it is cheap (default)",
    )
    p.add_argument(
        "--completing-s",
        type=float,
        default=None,
        help="seconds a node stays held after its job ends (epilog), for --predict (default 0.5)",
    )


def slurm_target(args: argparse.Namespace) -> SlurmTarget:
    """The target the arguments name; ``ValueError`` naming a bad one."""
    if not args.timeout > 0:
        raise ValueError(f"--timeout must be a positive number of seconds, not {args.timeout:g}")
    if args.max_mb is not None and not args.max_mb > 0:
        raise ValueError(f"--max-mb must be positive, not {args.max_mb:g}")
    try:
        from zoneinfo import ZoneInfo

        ZoneInfo(args.slurm_tz)
    except (KeyError, ValueError) as exc:
        raise ValueError(f"--slurm-tz {args.slurm_tz!r} is not a time zone name") from exc
    return SlurmTarget.from_spec(
        args.target or "commands",
        slurm_conf=args.slurm_conf,
        timeout_s=args.timeout,
        max_bytes=int(args.max_mb * 2**20) if args.max_mb else DEFAULT_MAX_BYTES,
        tz=args.slurm_tz,
        nodes_from=args.nodes_from,
        accounting=args.accounting,
        jobcomp_path=args.jobcomp,
    )


def _print_table(result: SlurmResult) -> None:
    snap = result.snapshot
    for j in snap.jobs:
        print(
            f"job  {j.display_id:<18} {j.state:<11} {j.reason or '-':<24} {j.partition:<10} {j.account or '-':<14} "
            f"gpus {j.n_gpus_allocated}/{j.n_gpus_requested:<5} {j.nodes or '-'}"
        )
    for n in snap.nodes:
        print(f"node {n.name:<18} {n.state:<11} {n.reason or '-':<24} gpus {n.n_gpus_allocated}/{n.n_gpus_configured}")


def _print_predictions(prediction) -> None:
    def at(t):
        return t.strftime("%H:%M:%S") if t is not None else "-"

    for p in prediction.jobs:
        print(
            f"pred {p.key:<18} {p.reason or '-':<22} slurm {at(p.expected_start_at):<8} twin {at(p.predicted_start_at):<8} "
            f"#{p.predicted_order or '-':<5} run {p.run_estimate_s or 0:.0f} s ({p.run_estimate_from or '-'}) {p.why_not}"
        )


def _predict(args: argparse.Namespace, result: SlurmResult, site):
    """The prediction of ``--predict`` (None without it or when the read failed)."""
    if not args.predict or not result.ok:
        return None
    from ingest.slurm.fleet import COMPLETING_S
    from ingest.slurm.predict import predict
    from ingest.slurm.runtime import estimator
    from twin.fleet.topology import fleet_topology

    return predict(
        result.snapshot,
        fleet_topology(site),
        run_times=estimator(result.snapshot.jobs, args.run_times),
        method=args.predict_method,
        completing_s=COMPLETING_S if args.completing_s is None else args.completing_s,
    )


def run_slurm_once(args: argparse.Namespace) -> int:
    """``ingest once --source slurm``."""
    try:
        target = slurm_target(args)
        inventory = site = None
        if getattr(args, "predict", False) and not args.site:
            raise ValueError("--predict needs --site: the fleet model plans on the site's nodes")
        if getattr(args, "completing_s", None) is not None and not args.completing_s >= 0:
            raise ValueError(f"--completing-s must be 0 or more seconds, not {args.completing_s:g}")
        if args.site:
            from ingest.sources.inventory import Inventory
            from twin.site.load import load_site

            site = load_site(args.site)
            inventory = Inventory.from_site(site)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    result = read_slurm(target, inventory)
    prediction = _predict(args, result, site) if getattr(args, "predict", False) else None
    if args.json:
        doc = {
            "source": result.source,
            "target": result.target,
            "ok": result.ok,
            "error": result.error,
            "warnings": result.warnings,
            **snapshot_json(result.snapshot),
        }
        if prediction is not None:
            doc["prediction"] = prediction.as_dict()
        print(json.dumps(doc, indent=1, allow_nan=False))
    else:
        _print_table(result)
        if prediction is not None:
            _print_predictions(prediction)
        print(f"# slurm: {json.dumps(snapshot_counts(result.snapshot))}", file=sys.stderr)
    if not result.ok:
        print(f"error: {result.error}", file=sys.stderr)
    return 0 if result.ok else 1
