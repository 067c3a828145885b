"""``clustertwin blast-radius``: what goes dark or throttles if one element trips."""

from __future__ import annotations

import argparse

from twin.commands.jsonout import dumps, finite_or_null
from twin.scenario.conditions import Scenario
from twin.scenario.load import load_scenario
from twin.site.load import load_site


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``blast-radius`` sub-command."""
    p = subparsers.add_parser(
        "blast-radius",
        help="racks, GPUs, jobs and tokens/s lost if one element trips",
        description="For a power element, source, plant, loop, CDU, switch, node or rack: the racks it "
        "feeds or cools, and from a twin run with it failed the racks gone dark, GPUs down "
        "or throttled, and job throughput lost.",
    )
    p.add_argument("--site", required=True, help="reference-site name or site file")
    p.add_argument("--scenario", default=None, metavar="FILE", help="trip it on top of this scenario")
    p.add_argument("element", help="element name, e.g. H1-TX1-A")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from twin.scenario.compare import blast_radius  # the engine is loaded only when the command runs

    state = load_site(args.site)
    scenario = load_scenario(args.scenario, state) if args.scenario else Scenario()
    report = finite_or_null(blast_radius(state, args.element, scenario).as_dict())
    if args.json:
        print(dumps(report, indent=2))
        return 0
    print(
        f"{report['element']} ({report['kind']}) on {report['site']}: feeds or cools {report['n_racks_fed']} racks "
        f"({report['n_gpus_fed']} GPUs)"
    )
    print(
        f"  dark racks: {report['n_racks_dark']}; GPUs down {report['n_gpus_down']}, throttled "
        f"{report['n_gpus_throttled']}; IT power lost {report['it_power_lost_mw']:.2f} MW"
    )
    for job in report["jobs"]:
        print(f"  job {job['name']}: {job['tokens_per_s']:,.0f} → {job['after_tokens_per_s']:,.0f} tokens/s")
    return 0
