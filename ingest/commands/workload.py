"""``clustertwin workload simulate|whatif|sweep|import|list|show``: the fleet on a site, from a trace or a generated mix."""

from __future__ import annotations

import argparse
import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from ingest.workload import ctfile, run, scenario
from twin.commands.jsonout import dumps
from twin.errors import InputError
from twin.fleet.policy import BACKFILLS, ORDERINGS, POWER_MODES, Policy
from twin.fleet.simulate import SimOptions

MAX_DAYS = 366.0
SUMMARY_KEYS = (
    "jobs_count",
    "jobs_completed_count",
    "mean_wait_s",
    "median_wait_s",
    "mean_turnaround_s",
    "area_weighted_response_s",
    "allocated_frac",
    "utilisation_frac",
    "fragmentation_frac",
    "energy_mwh",
    "tokens_per_mwh",
    "cost_usd",
    "carbon_kg",
    "sim_wall_s",
)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``workload`` with its sub-commands."""
    p = subparsers.add_parser("workload", help="a fleet of jobs on a site: simulate, import, list, show")
    sub = p.add_subparsers(dest="workload_command", required=True, metavar="SUBCOMMAND")
    _add_simulate(sub)
    _add_whatif(sub)
    _add_sweep(sub)
    imp = sub.add_parser("import", help="read a trace and report what was read (optionally write it as Parquet)")
    imp.add_argument("file")
    imp.add_argument("--format", choices=run.FORMATS)
    imp.add_argument("--out", help="write the jobs as a ClusterTwin Parquet workload file")
    imp.add_argument("--json", action="store_true")
    imp.set_defaults(func=_import)
    ls = sub.add_parser("list", help="the formats the importers read and the generator's mixes")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=_list)
    show = sub.add_parser("show", help="statistics of a workload: jobs, GPUs, run times, teams")
    show.add_argument("file")
    show.add_argument("--format", choices=run.FORMATS)
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=_show)


def _add_simulate(sub) -> None:
    s = sub.add_parser("simulate", help="run a workload on a site under a scheduling policy (docs/fleet.md)")
    s.add_argument("--site", required=True, help="site name or file")
    src = s.add_mutually_exclusive_group(required=True)
    src.add_argument("--workload", help="trace or workload file")
    src.add_argument("--generate", help="a generated mix: llm-lab[:jobs=N,teams=N,n_pretrain=N,pretrain_job=NAME]")
    s.add_argument("--format", choices=run.FORMATS, help="format of --workload (default: from the file name)")
    s.add_argument("--days", type=float, required=True, help="simulated days")
    s.add_argument("--policy", choices=ORDERINGS, default="priority", help="queue order (default: priority)")
    s.add_argument("--backfill", choices=BACKFILLS, default="easy")
    s.add_argument("--placement", choices=("flat", "tree", "block"), default="tree")
    s.add_argument("--power", choices=POWER_MODES, default="per_job", help="power-aware admission (default: per_job)")
    s.add_argument("--failures", choices=("on", "off"), default="on")
    s.add_argument("--scenario", help="fleet scenario file (policy, quotas, reservations, DR events, tariff)")
    s.add_argument(
        "--compare", help="a second run: a scenario file, or key=value,… policy changes (e.g. backfill=none)"
    )
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=_simulate)


def _add_whatif(sub) -> None:
    w = sub.add_parser(
        "whatif",
        help="the same workload on the site and on the site with racks converted (docs/fleet.md, whole-site what-if)",
    )
    w.add_argument("--site", required=True, help="site name or file")
    w.add_argument("--convert", required=True, help="racks to convert and the new rack type: HALL[,HALL…]=RACK_TYPE")
    w.add_argument(
        "--by",
        choices=("halls", "rows", "racks", "new-hall-like"),
        default="halls",
        help="what --convert names (default: halls; new-hall-like: add a hall built like the one hall named)",
    )
    w.add_argument(
        "--grow-quotas",
        action="store_true",
        help="every team's quota grows in proportion to the GPUs the conversion adds",
    )
    src = w.add_mutually_exclusive_group(required=True)
    src.add_argument("--workload", help="trace or workload file")
    src.add_argument("--generate", help="a generated mix: llm-lab[:jobs=N,teams=N,n_pretrain=N,pretrain_job=NAME]")
    w.add_argument("--format", choices=run.FORMATS, help="format of --workload (default: from the file name)")
    w.add_argument("--days", type=float, required=True, help="simulated days on each side")
    w.add_argument(
        "--retarget", default="", help="job kinds sent to the converted racks' GPU type (e.g. finetune,eval)"
    )
    w.add_argument("--policy", choices=ORDERINGS, default="priority")
    w.add_argument("--backfill", choices=BACKFILLS, default="easy")
    w.add_argument("--placement", choices=("flat", "tree", "block"), default="tree")
    w.add_argument("--power", choices=POWER_MODES, default="per_job")
    w.add_argument("--failures", choices=("on", "off"), default="on")
    w.add_argument("--seed", type=int, default=0)
    w.add_argument("--json", action="store_true")
    w.set_defaults(func=_whatif)


def _add_sweep(sub) -> None:
    w = sub.add_parser(
        "sweep", help="one simulation per point of a grid of policy settings, on Dask or local processes"
    )
    w.add_argument("--site", required=True, help="site name or file")
    w.add_argument("--generate", required=True, help="a generated mix: llm-lab[:jobs=N,…]")
    w.add_argument("--days", type=float, required=True, help="simulated days of each point")
    w.add_argument("--grid", action="append", required=True, help="KEY=V1,V2,… (a Policy field; repeat for more)")
    w.add_argument("--scheduler", help="address of a Dask distributed scheduler (default: local processes)")
    w.add_argument("--processes", type=int, default=2, help="local processes without --scheduler (default: 2)")
    w.add_argument("--failures", choices=("on", "off"), default="on")
    w.add_argument("--seed", type=int, default=0)
    w.add_argument("--json", action="store_true")
    w.set_defaults(func=_sweep)


def _sweep(args) -> int:
    from ingest.workload import sweep

    if not (math.isfinite(args.days) and 0 < args.days <= MAX_DAYS):
        raise InputError(f"--days must be within (0, {MAX_DAYS:g}], got {args.days}")
    spec = sweep.SweepSpec(
        site=args.site,
        generate=args.generate,
        days=args.days,
        grid=sweep.parse_grid(args.grid),
        seed=args.seed,
        failures=args.failures == "on",
    )
    _site(args.site)  # a bad site name fails here, in one line, before any task
    rows = sweep.run_sweep(spec, args.scheduler, args.processes)
    out = {"site": args.site, "points_count": len(rows), "points": rows}
    if args.json:
        print(dumps(out, indent=2))
    else:
        for r in rows:
            where = ",".join(f"{k}={v}" for k, v in r["point"].items())
            print(f"{where:<40} wait {_fmt(r['mean_wait_s']):>10} s  util {_fmt(r['utilisation_frac']):>8}")
    return 0


def _whatif(args) -> int:
    from twin.fleet import whatif
    from twin.fleet.edit_whatif import FleetEdit, fleet_edit_whatif
    from twin.fleet.workload import KINDS

    if not (math.isfinite(args.days) and 0 < args.days <= MAX_DAYS):
        raise InputError(f"--days must be within (0, {MAX_DAYS:g}], got {args.days}")
    names, sep, rack_type = args.convert.rpartition("=")
    selected = tuple(n.strip() for n in names.split(",") if n.strip())
    if not sep or not selected or not rack_type.strip():
        raise InputError(f"--convert: expected HALL[,HALL…]=RACK_TYPE, got {args.convert!r}")
    kinds = tuple(k.strip() for k in args.retarget.split(",") if k.strip())
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise InputError(f"--retarget: unknown job kind {bad[0]!r}; expected some of {', '.join(KINDS)}")
    state = _site(args.site)
    if args.by == "new-hall-like":
        if len(selected) != 1:
            raise InputError(f"--by new-hall-like: name the one hall to build it like, got {len(selected)}")
        conversion = whatif.Conversion(rack_type=rack_type.strip(), add_hall_like=selected[0])
    else:
        named = {"halls": (), "rows": (), "racks": (), args.by: selected}
        conversion = whatif.Conversion(rack_type.strip(), named["halls"], named["rows"], named["racks"])
    converted = whatif.convert_site(state, conversion)
    wl = _workload(args, state, args.days)
    base = Policy(ordering=args.policy, backfill=args.backfill, placement=args.placement, power=args.power)
    policy = run.build_policy(base, wl, None, state)
    opts = SimOptions(horizon_s=args.days * 86_400.0, failures=args.failures == "on", seed=args.seed)
    edit = FleetEdit(conversion=conversion, retarget_kinds=kinds, grow_quotas=args.grow_quotas)
    report = fleet_edit_whatif(
        state, wl.result.jobs, policy, opts, edit, converted=converted, horizon_range_s=(0.0, MAX_DAYS * 86_400.0)
    )
    report["conversion"] = conversion.as_dict()
    if args.json:
        print(dumps(report, indent=2))
    else:
        _print_whatif(report)
    return 0


def _print_whatif(report: dict) -> None:
    print(f"{'; '.join(report['edit'])} over {report['horizon_s'] / 86_400.0:g} days")
    b, v = report["baseline"], report["scenario"]
    for key in ("n_gpus", "utilisation_frac", "tokens_per_day", "mean_wait_s", "jobs_pending_count", "energy_mwh"):
        print(f"  {key:<22} {_fmt(b[key]):>14} → {_fmt(v[key]):>14}")
    print(f"  design warnings of the converted site: {v['design_warnings_count']}")
    for t in report["teams"][:20]:
        tb, tv = t["baseline"], t["scenario"]
        print(
            f"    {t['team']:<16} wait {_fmt(tb.get('mean_wait_s')):>10} → {_fmt(tv.get('mean_wait_s')):>10} s"
            f"  pending {tb.get('jobs_pending_count', 0)} → {tv.get('jobs_pending_count', 0)}"
        )


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}" if math.isfinite(v) else "-"
    return str(v)


def _site(name: str):
    from twin.site.load import load_site

    return load_site(name)


def _workload(args, state, days: float):
    gpn = int(np.bincount(state.gpu_node).max()) if state.n_gpus else 8
    if args.workload:
        return run.load_workload(Path(args.workload), args.format, gpn)
    return run.parse_generate(args.generate, state.n_gpus, days, args.seed, state)


def _simulate(args) -> int:
    if not (math.isfinite(args.days) and 0 < args.days <= MAX_DAYS):
        raise InputError(f"--days must be within (0, {MAX_DAYS:g}], got {args.days}")
    state = _site(args.site)
    wl = _workload(args, state, args.days)
    sc = scenario.read_scenario(args.scenario) if args.scenario else None
    base = Policy(ordering=args.policy, backfill=args.backfill, placement=args.placement, power=args.power)
    policy = run.build_policy(base, wl, sc, state)
    opts = _options(args, sc)
    report = run.simulate(state, wl, policy, opts)
    if args.compare:
        other = _compare_policy(args.compare, base, wl, state)
        b = run.simulate(
            state,
            wl,
            other,
            _options(args, scenario.read_scenario(args.compare) if args.compare.endswith(".toml") else sc),
        )
        report = {"a": report, "b": b, "diff": {k: _diff(report.get(k), b.get(k)) for k in SUMMARY_KEYS}}
    if args.json:
        print(dumps(report, indent=2))
    else:
        _print(report)
    return 0


def _compare_policy(text: str, base: Policy, wl, state) -> Policy:
    if text.endswith(".toml"):
        return run.build_policy(base, wl, scenario.read_scenario(text), state)
    return run.policy_changes(text, run.build_policy(base, wl, None, state))


def _options(args, sc) -> SimOptions:
    opts = SimOptions(horizon_s=args.days * 86_400.0, failures=args.failures == "on", seed=args.seed)
    if sc is not None:
        opts = replace(
            opts,
            failure_model=sc.failure_model or opts.failure_model,
            tariff=sc.tariff,
            carbon=sc.carbon,
        )
    return opts


def _diff(a, b):
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return b - a
    return None


def _print(report: dict) -> None:
    runs = [("", report)] if "a" not in report else [("A ", report["a"]), ("B ", report["b"])]
    for label, r in runs:
        print(f"{label}site {r['site']}  policy {r['policy']}")
        for k in SUMMARY_KEYS:
            v = r.get(k)
            print(f"  {k:<28} {v:.4g}" if isinstance(v, float) else f"  {k:<28} {v}")
        for t in r["teams"][:20]:
            print(
                f"    {t['team']:<16} jobs {t['jobs_count']:>7}  wait {t['mean_wait_s']:>10.1f} s  GPU-h {t['gpu_h']:>10.1f}"
            )


def _import(args) -> int:
    wl = run.load_workload(Path(args.file), args.format)
    summary = wl.result.summary()
    if args.out:
        ctfile.write_parquet(wl.result.jobs, args.out)
        summary["written"] = args.out
    print(dumps(summary, indent=2) if args.json else "\n".join(f"{k}: {v}" for k, v in summary.items()))
    return 0


def _list(args) -> int:
    out = {"formats": list(run.FORMATS), "generators": ["llm-lab"]}
    print(dumps(out, indent=2) if args.json else "\n".join(f"{k}: {', '.join(v)}" for k, v in out.items()))
    return 0


def _show(args) -> int:
    wl = run.load_workload(Path(args.file), args.format)
    jobs = wl.result.jobs
    g = np.array([j.n_gpus for j in jobs]) if jobs else np.zeros(0)
    r = np.array([j.run_s for j in jobs]) if jobs else np.zeros(0)
    teams: dict[str, int] = {}
    for j in jobs:
        teams[j.team] = teams.get(j.team, 0) + 1
    out = {
        **wl.result.summary(),
        "median_gpus_count": float(np.median(g)) if g.size else None,
        "max_gpus_count": int(g.max()) if g.size else None,
        "median_run_s": float(np.median(r)) if r.size else None,
        "mean_run_s": float(r.mean()) if r.size else None,
        "gpu_h": float((g * r).sum() / 3600.0),
        "teams": teams,
    }
    print(dumps(out, indent=2) if args.json else "\n".join(f"{k}: {v}" for k, v in out.items()))
    return 0
