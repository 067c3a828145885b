"""``clustertwin project``: site-level projections, optionally under a what-if scenario.

Without ``--scenario`` it prints the projection of the site under nominal conditions.  With
one it prints ``{baseline, scenario, diff}`` (:func:`twin.scenario.compare.compare`'s report): the same
projection for the baseline and for the scenario (its edited site when edits change the
layout), and what changed, marked worse or better.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from twin.commands.jsonout import dumps, finite_or_null
from twin.scenario.compare import compare
from twin.scenario.conditions import Scenario, ScenarioError
from twin.scenario.load import load_scenario
from twin.scenario.projection import project
from twin.scenario.reports import Comparison, ProjectionReport
from twin.site.load import load_site
from twin.training import goodput
from twin.training import steptime as training
from twin.training.sitejob import PlacementError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``project`` sub-command."""
    p = subparsers.add_parser(
        "project",
        help="project a site's power, cooling, fabric and job under a scenario",
        description="Run the twin of a site under nominal conditions or a scenario file and report IT and "
        "facility load, generation, runnable GPUs and the power cap, N-1 violations, hottest "
        "GPUs and racks, time to throttle, power swing, fabric and job throughput, each source's "
        "output and share of the swing, and what the site's shortfall policy does.  With a "
        "scenario: the baseline, the scenario and their differences (docs/scenarios.md).",
    )
    p.add_argument("--site", required=True, help="reference-site name or site file")
    p.add_argument("--scenario", default=None, metavar="FILE", help="scenario TOML (docs/scenarios.md)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    state = load_site(args.site)
    report: Comparison | ProjectionReport
    try:
        if args.scenario:
            report = compare(state, load_scenario(args.scenario, state))
        else:
            report = project(state, Scenario())
    except (PlacementError, training.TrainingConfigError, goodput.ReliabilityError) as exc:
        raise ScenarioError(f"{args.scenario or 'nominal conditions'}: job: {exc}") from exc
    if args.json:
        print(dumps(report.as_dict(), indent=2))  # unbounded times (never throttles) become null
        return 0
    if isinstance(report, Comparison):  # a scenario was given
        _print_comparison(report)
        return 0
    _print_report(finite_or_null(report.as_dict()))
    return 0


def _print_report(report: dict[str, Any], indent: str = "") -> None:
    for key, value in report.items():
        if isinstance(value, (dict, list)):
            print(f"{indent}{key}:")
            for line in dumps(value, indent=2).splitlines():
                print(f"{indent}  {line}")
        else:
            print(f"{indent}{key:<28} {value}")


def _fmt(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:,.4g}"


def _print_comparison(report: Comparison) -> None:
    """The headline figures side by side, then what the edits broke."""
    diff = report.diff
    print(f"{'figure':<44} {'baseline':>12} {'scenario':>12} {'change':>8}")
    rows = list(diff.headline.items()) + [
        (f"time_to_throttle_s.{k}", row) for k, row in diff.time_to_throttle_s.items()
    ]
    for key, row in rows:
        print(f"{key:<44} {_fmt(row.baseline):>12} {_fmt(row.scenario):>12} {row.change:>8}")
    new = diff.design_findings.new
    print(f"\n{len(new)} new design findings" + (":" if new else ""))
    for f in new[:40]:
        print(f"  {f.severity:<8} {f.check:<20} {f.element:<24} {f.message}")
    if len(new) > 40:
        print(f"  … and {len(new) - 40} more (--json lists them all)")
    changed = [r for r in diff.racks if r.change in ("worse", "added", "removed") or r.layout]
    print(
        f"\n{len(changed)} racks changed or worse; {len(diff.power_elements)} power elements, "
        f"{len(diff.cdus)} CDUs and {len(diff.loops)} loops changed load"
    )
