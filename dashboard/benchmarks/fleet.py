"""Benchmarks of the fleet section of ``/jobs`` with 10,000 jobs (``clustertwin bench --only fleet_page``) and of
the time to answer ``/fleet-whatif`` (``fleet_whatif_browser``).

A live fleet on colossus whose workload arrives faster than the site drains it, so that
about 10,000 jobs run or wait when the warm-up ends.  Measured, as the page does it: the
first render of the section (layout and JSON encoding), and one live update per tick
(the table's page, KPIs, teams, fragmentation and timeline, encoded), plus a search and
a sort.  Targets: render ≤ 1.5 s, live update ≤ 100 ms of server time.  Wall times are
the best of 5; ``*_cpu_ms`` the process CPU time of the same calls.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

import plotly

from twin.bench import benchmark, best_of

T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)
RENDER_BUDGET_MS = 1500.0
UPDATE_BUDGET_MS = 100.0
TARGET_JOBS = 10_000


class FleetOnlyView:
    """The part of a live view the fleet section reads."""

    def __init__(self, state, fleet) -> None:
        self.state, self._fleet = state, fleet

    def fleet(self):
        return self._fleet


def _encode(value) -> str:
    return json.dumps(value, cls=plotly.utils.PlotlyJSONEncoder)


def _cpu_ms(func, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        func()
        best = min(best, time.process_time() - t)
    return best * 1e3


def busy_fleet(state, start: datetime = T0):
    """A live fleet starting at ``start`` and holding about :data:`TARGET_JOBS` running and pending jobs."""
    from ingest.live.fleet import LiveFleet, LiveMix

    mix = LiveMix(jobs_per_day=200_000.0, days=0.1, warmup_s=0.06 * 86_400.0, median_run_s=3600.0, mean_run_s=14_400.0)
    return LiveFleet(state, start, mix=mix)


@benchmark("fleet_page")
def fleet_page_benchmark(site: str = "colossus") -> dict:
    """Render and live-update time of the fleet section with ~10,000 jobs."""
    from dash import html

    from dashboard.analysis.fleet_query import query_jobs
    from dashboard.components import fleet_panel
    from twin.site.load import load_site

    state = load_site(site)
    t0 = time.perf_counter()
    fleet = busy_fleet(state)
    build_s = time.perf_counter() - t0
    view = FleetOnlyView(state, fleet)
    frame = fleet.frame()

    def render() -> str:
        fleet._frame = None  # a new tick: the frame is built again
        return _encode(html.Div(fleet_panel.section(view)).to_plotly_json())

    key = fleet_panel.figures_key(fleet, frame, "pod")

    def update() -> str:  # a tick: the frame is new, the figures' minute has not moved
        fleet._frame = None
        res = fleet_panel.table_page(view, 3, [{"column_id": "n_gpus", "direction": "desc"}], "all", "")
        return _encode([res, fleet_panel.live_parts(view, "pod", key)])

    def minute() -> str:  # a tick that crosses a sampled minute: the figures too
        fleet._frame = None
        res = fleet_panel.table_page(view, 3, [{"column_id": "n_gpus", "direction": "desc"}], "all", "")
        return _encode([res, fleet_panel.live_parts(view, "pod", None)])

    search = lambda: query_jobs(fleet.frame(), "pending", "team3 resources", None, 0)  # noqa: E731
    sort = lambda: query_jobs(fleet.frame(), "all", "", [{"column_id": "wait_s", "direction": "desc"}], 7)  # noqa: E731
    out = {
        "site": site,
        "jobs_count": frame.n_jobs,
        "running_jobs_count": frame.count("running"),
        "pending_jobs_count": frame.count("pending"),
        "fleet_build_s": round(build_s, 1),
        "render_ms": round(best_of(render) * 1e3, 1),
        "render_cpu_ms": round(_cpu_ms(render), 1),
        "render_kb": round(len(render()) / 1024, 1),
        "update_ms": round(best_of(update) * 1e3, 1),
        "update_cpu_ms": round(_cpu_ms(update), 1),
        "update_kb": round(len(update()) / 1024, 1),
        "minute_update_ms": round(best_of(minute, repeat=3) * 1e3, 1),
        "minute_update_cpu_ms": round(_cpu_ms(minute, repeat=3), 1),
        "search_ms": round(best_of(search) * 1e3, 2),
        "sort_ms": round(best_of(sort) * 1e3, 2),
    }
    out["render_budget_ratio"] = round(out["render_ms"] / RENDER_BUDGET_MS, 3)
    out["update_budget_ratio"] = round(out["update_ms"] / UPDATE_BUDGET_MS, 3)
    return out


ANSWER_TARGET_S = 3.0  # the target for a 7-day fleet what-if on colossus, answered in the browser


def _answer(worker, question, state, policy) -> tuple[Any, float]:
    """Submit ``question`` to ``worker`` and wait for its answer; (run, wall seconds)."""
    t = time.perf_counter()
    run = worker.submit(question, state, policy)
    while run.finished_s is None:
        time.sleep(0.02)
    if run.error is not None:
        raise RuntimeError(run.error)
    return run, time.perf_counter() - t


@benchmark("fleet_whatif_browser")
def fleet_whatif_browser(days: float = 1.0, site: str = "colossus") -> dict:
    """Time to answer ``/fleet-whatif``'s questions on ``site`` over ``days`` with the page's default workload.

    The page's own worker (:class:`dashboard.whatif.fleet_runs.Worker`, fresh caches) answers:
    first "H4 as GB200 NVL72" (workload, converted site, the baseline side in a side process
    beside the scenario side: what a first question costs when nothing was computed ahead),
    then a 20 MW demand-response cut for 4 h from hour 6 on the same baseline (one side), then
    the first question again (the cached answer).  A second fresh worker then computes the
    baseline ahead (:meth:`Worker.warm`, as the page does when its workload inputs are known;
    ``warm_baseline_s``) and is asked the first question (``warm_first_answer_s``: what the
    operator's first question costs once the baseline is warm).  ``first_answer_cpu_s`` is this
    process's CPU time only (the side process's is not in it).  The issue's target: a 7-day
    what-if on colossus in at most :data:`ANSWER_TARGET_S` seconds (``clustertwin bench`` runs
    ``days`` = 1; call with ``days=7`` for the target's case).
    """
    from dataclasses import replace

    from dashboard.whatif.fleet_runs import Question, Worker, interactive_jobs_per_day
    from twin.fleet.edit_whatif import FleetEdit
    from twin.fleet.policy import DemandResponse, Policy
    from twin.fleet.whatif import Conversion
    from twin.site.load import load_site

    state = load_site(site)
    worker = Worker()
    first = Question(
        site=state.name,
        horizon_days=days,
        jobs_per_day=round(interactive_jobs_per_day(state.n_gpus), 3),
        pretraining=True,
        seed=0,
        tariff_usd_per_mwh=None,
        carbon_kg_per_mwh=None,
        edit=FleetEdit(conversion=Conversion("GB200-NVL72", halls=(state.hall_name[-1],))),
    )
    try:
        cpu = time.process_time()
        run, first_s = _answer(worker, first, state, Policy())
        first_cpu_s = time.process_time() - cpu
        cut = DemandResponse(start_s=6 * 3600.0, duration_s=4 * 3600.0, cut_mw=20.0)
        second, second_s = _answer(worker, replace(first, edit=FleetEdit(demand_response=cut)), state, Policy())
        _, cached_s = _answer(worker, first, state, Policy())
    finally:
        worker.close()
    warmed = Worker()
    try:
        t = time.perf_counter()
        warmed.warm(first, state, Policy())
        while warmed.baselines.get(first.baseline_key()) is None:
            time.sleep(0.02)
        warm_baseline_s = time.perf_counter() - t
        warm_run, warm_first_s = _answer(warmed, first, state, Policy())
    finally:
        warmed.close()
    assert warm_run.answer is not None and (warm_run.answer["baseline_ahead"] or warm_run.answer["baseline_cached"])
    answer = run.answer
    assert answer is not None and second.answer is not None
    return {
        "horizon_days": days,
        "jobs_count": answer["baseline"]["jobs_count"],
        "first_answer_s": first_s,
        "first_answer_cpu_s": first_cpu_s,
        "baseline_side_s": answer["baseline"]["wall_s"],
        "scenario_side_s": answer["scenario"]["wall_s"],
        "second_answer_s": second_s,
        "cached_answer_s": cached_s,
        "warm_baseline_s": warm_baseline_s,
        "warm_first_answer_s": warm_first_s,
        "conversion_gpus_added_count": answer["diff"]["n_gpus"],
        "conversion_tokens_per_day_change": answer["diff"]["tokens_per_day"],
        "dr_jobs_power_capped_count": second.answer["scenario"]["jobs_power_capped_count"],
        "dr_jobs_preempted_count": second.answer["scenario"]["jobs_preempted_count"],
        "dr_energy_mwh_change": second.answer["diff"]["energy_mwh"],
        "answer_target_s": ANSWER_TARGET_S,
        "first_answer_to_target_ratio": first_s / ANSWER_TARGET_S,
        "warm_first_answer_to_target_ratio": warm_first_s / ANSWER_TARGET_S,
    }
