"""``clustertwin project``: site-level projections, optionally under a what-if scenario."""

from __future__ import annotations

import json
import math
import sys

from twin.site.errors import SiteError
from twin.training.jobfile import JobFileError
from twin.engine.projection import project
from twin.site.scenario import Scenario, ScenarioError, load_scenario
from twin.site.load import load_site


def register(subparsers) -> None:
    """Add the ``project`` sub-command."""
    p = subparsers.add_parser(
        "project", help="project a site's power, cooling, fabric and job under a scenario",
        description="Run the twin of a site under nominal conditions or a scenario file and report IT and "
                    "facility load, generation, runnable GPUs and the power cap, N-1 violations, hottest "
                    "GPUs and racks, time to throttle, power swing, fabric and job throughput.")
    p.add_argument("--site", required=True, help="reference-site name or site file")
    p.add_argument("--scenario", default=None, metavar="FILE", help="scenario TOML (see twin/site/scenario.py)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_run)


def _clean(value):
    """JSON has no infinity: unbounded times become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _run(args) -> int:
    try:
        state = load_site(args.site)
        scenario = load_scenario(args.scenario, state) if args.scenario else Scenario()
        report = _clean(project(state, scenario))
    except (SiteError, ScenarioError, JobFileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for key, value in report.items():
        if isinstance(value, (dict, list)):
            print(f"{key}:")
            for line in json.dumps(value, indent=2).splitlines():
                print(f"  {line}")
        else:
            print(f"{key:<28} {value}")
    return 0
