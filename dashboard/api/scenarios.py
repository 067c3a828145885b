"""API routes of what-if scenarios: the stored scenario files, and projections of a scenario body.

``POST /project`` takes the two tables of a scenario file as JSON, writes them as TOML
(``tomli-w``) and parses that with the scenario file parser, so a body and a file mean
exactly the same and the answer is the report of ``clustertwin project --json``.
Projections run one at a time (a colossus projection of the default 600 s costs about
1 CPU-second; ``settle_s`` is capped at 1 h here) and the last few answers are kept.
"""

from __future__ import annotations

import threading

import tomli_w

from dashboard.api import models as m
from dashboard.api.routing import ApiError, NotFound, api
from dashboard.views.context import live_view
from dashboard.views.scenario_files import SCENARIO_DIR, available_scenarios
from dashboard.whatif.tables import baseline_text
from twin.cache import BoundedCache
from twin.commands.jsonout import finite_or_null
from twin.scenario.conditions import ScenarioError
from twin.scenario.fleetload import FleetLoad
from twin.scenario.load import load_scenario, parse_scenario
from twin.scenario.projection import project
from twin.training import goodput, steptime
from twin.training.sitejob import PlacementError

PROJECTION_WAIT_S = 30.0  # a request waits this long for the projection running before it, then gets 503
CACHED_PROJECTIONS = 16
_running = threading.Lock()
# (site name, scenario text, id of the fleet load) → (the load, report)
_projections: BoundedCache[tuple[FleetLoad | None, dict]] = BoundedCache(CACHED_PROJECTIONS)


def scenario_toml(body: m.ProjectBody) -> str:
    """The scenario file text of a body (keys left out are left out of the file)."""
    head = body.scenario.model_dump(exclude_none=True)
    if "time" in head:
        head["time"] = body.scenario.time.isoformat()
    conditions = body.conditions.model_dump(exclude_none=True)
    conditions = {k: v for k, v in conditions.items() if v not in ([], {})}
    return tomli_w.dumps({"scenario": head, "conditions": conditions})


def projection(site_state, text: str, file: str, load: FleetLoad | None = None) -> dict:
    """The ``project`` report of scenario ``text`` on ``site_state`` (cached, one computation at a time).

    With the live fleet's ``load`` (a what-if of the editor) the GPUs outside the job run the fleet's
    occupancy, as in the browser, instead of the file's ``fleet_util_frac``; ``baseline`` says which.
    """
    key = (site_state.name, text, id(load))
    if not _running.acquire(timeout=PROJECTION_WAIT_S):
        raise ApiError(503, "another projection is running: try again shortly")
    try:
        cached = _projections.get(key, valid=lambda hit: hit[0] is load)
        if cached is not None:
            return cached[1]
        scenario = parse_scenario(text, site_state, file)
        if load is not None:
            scenario.fleet_util_frac = load
        try:
            report = finite_or_null(project(site_state, scenario).as_dict())
        except (PlacementError, steptime.TrainingConfigError, goodput.ReliabilityError) as exc:
            raise ScenarioError(f"{file}: job: {exc}") from exc
        except FileNotFoundError:
            raise ScenarioError(f"{file}: conditions.job: no job file {scenario.job!r}") from None
        if load is not None:
            report["baseline"] = baseline_text(site_state, load)
        return _projections.put(key, (load, report))[1]
    finally:
        _running.release()


@api.route(
    "POST",
    "/project",
    summary="Project the site under a scenario (the report of `clustertwin project --json`)",
    role="viewer",
    tag="scenarios",
    body=m.ProjectBody,
    response=m.Projection,
    errors=(503,),
)
def post_project(body: m.ProjectBody) -> m.Projection:
    state = live_view().state
    return m.Projection.model_validate(projection(state, scenario_toml(body), "body"))


def _entry(name: str) -> m.ScenarioText:
    if name not in available_scenarios():
        raise NotFound(f"no scenario {name!r} (scenarios: {', '.join(available_scenarios()) or 'none'})")
    path = SCENARIO_DIR / f"{name}.toml"
    text = path.read_text(encoding="utf-8")
    try:
        scenario = load_scenario(path, live_view().state)
    except ScenarioError:  # a scenario of another site: listed, with its file's own words
        return m.ScenarioText(name=name, title=name, description="(for another site)", toml=text)
    return m.ScenarioText(name=name, title=scenario.name, description=scenario.description, toml=text)


@api.route("GET", "/scenarios", summary="The stored scenario files", tag="scenarios", response=m.ScenarioList)
def list_scenarios() -> m.ScenarioList:
    return m.ScenarioList(
        items=[m.ScenarioEntry(**_entry(n).model_dump(exclude={"toml"})) for n in available_scenarios()]
    )


@api.route(
    "GET",
    "/scenarios/{name}",
    summary="One stored scenario file, with its text",
    tag="scenarios",
    params=m.NameParam,
    response=m.ScenarioText,
    errors=(404,),
)
def get_scenario(params: m.NameParam) -> m.ScenarioText:
    return _entry(params.name)


@api.route(
    "POST",
    "/scenarios/{name}/project",
    summary="Project the site under a stored scenario",
    tag="scenarios",
    params=m.NameParam,
    response=m.Projection,
    errors=(404, 503),
)
def project_stored(params: m.NameParam) -> m.Projection:
    entry = _entry(params.name)
    return m.Projection.model_validate(projection(live_view().state, entry.toml, f"{params.name}.toml"))
