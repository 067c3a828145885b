"""``clustertwin project``: site-level projections, optionally under a what-if scenario."""

from __future__ import annotations

from twin.commands.jsonout import dumps, finite_or_null
from twin.engine.projection import project
from twin.site.load import load_site
from twin.site.scenario import Scenario, ScenarioError, load_scenario
from twin.training import goodput, steptime as training
from twin.training.sitejob import PlacementError


def register(subparsers) -> None:
    """Add the ``project`` sub-command."""
    p = subparsers.add_parser(
        "project", help="project a site's power, cooling, fabric and job under a scenario",
        description="Run the twin of a site under nominal conditions or a scenario file and report IT and "
                    "facility load, generation, runnable GPUs and the power cap, N-1 violations, hottest "
                    "GPUs and racks, time to throttle, power swing, fabric and job throughput, each source's "
                    "output and share of the swing, and what the site's shortfall policy does.")
    p.add_argument("--site", required=True, help="reference-site name or site file")
    p.add_argument("--scenario", default=None, metavar="FILE", help="scenario TOML (see twin/site/scenario.py)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_run)


def _run(args) -> int:
    state = load_site(args.site)
    scenario = load_scenario(args.scenario, state) if args.scenario else Scenario()
    try:
        report = finite_or_null(project(state, scenario))  # unbounded times (never throttles) become null
    except (PlacementError, training.TrainingConfigError, goodput.ReliabilityError) as exc:
        raise ScenarioError(f"{args.scenario or 'nominal conditions'}: job: {exc}") from exc
    if args.json:
        print(dumps(report, indent=2))
        return 0
    for key, value in report.items():
        if isinstance(value, (dict, list)):
            print(f"{key}:")
            for line in dumps(value, indent=2).splitlines():
                print(f"  {line}")
        else:
            print(f"{key:<28} {value}")
    return 0
