"""API routes of the site and its live state: what the dashboard's pages show, as JSON.

Every list is paged (``limit`` ≤ 1000, ``offset``) and answers the page with
``total_count``; values come from the latest published tick of the live view, read once
per request so a page is one consistent instant.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import numpy as np

from dashboard.api import models as m
from dashboard.api.routing import NotFound, api
from dashboard.shell.status import alert_counts
from dashboard.views.context import live_view
from twin.engine.snapshot import GPU_DOWN, GPU_OFF, GPU_THROTTLED
from twin.site.tables import POWER_KINDS, SOURCE_KINDS

TIER_NAMES = ("leaf", "spine", "core")


def _f(value) -> float | None:
    """A float for JSON: NaN and ±inf are null."""
    value = float(value)
    return value if np.isfinite(value) else None


def _window(total: int, page: m.Page) -> range:
    return range(min(page.offset, total), min(page.offset + page.limit, total))


def _tick():
    view = live_view()
    tick = view.latest_tick()
    return view, view.state, tick.snapshot, tick.detail


# ------------------------------------------------------------------ site
@api.route(
    "GET", "/site", summary="The site: counts of its entities and its default job", tag="site", response=m.SiteSummary
)
def get_site() -> m.SiteSummary:
    s = live_view().state
    return m.SiteSummary(
        site=s.name,
        description=s.description,
        n_halls=len(s.hall_name),
        n_racks=s.n_racks,
        n_nodes=s.n_nodes,
        n_gpus=s.n_gpus,
        n_cdus=s.n_cdus,
        n_cooling_loops=len(s.loop_name),
        n_power_elements=s.n_power,
        n_power_sources=s.n_sources,
        n_switches=len(s.switch_name),
        n_links=int(s.link_a.size),
        default_job=s.default_job,
        gpu_types=[g.name for g in s.gpu_specs],
    )


def _entities(s, kind: str) -> tuple[list[str], Callable[[int], tuple[str | None, str | None]]]:
    """Names of the entities of ``kind`` and a function id → (parent, kind) for them."""
    table = {
        "halls": (s.hall_name, lambda i: (None, None)),
        "rows": (s.row_name, lambda i: (s.hall_name[s.row_hall[i]], None)),
        "racks": (s.rack_name, lambda i: (s.hall_name[s.rack_hall[i]], s.rack_type[i])),
        "nodes": (s.node_name, lambda i: (s.rack_name[s.node_rack[i]], None)),
        "cdus": (s.cdu_name, lambda i: (s.loop_name[s.cdu_loop[i]], s.cdu_specs[s.cdu_spec[i]].name)),
        "loops": (s.loop_name, lambda i: (s.plant_name[s.loop_plant[i]], None)),
        "power": (
            s.power_name,
            lambda i: (
                s.power_name[s.power_parent[i]] if s.power_parent[i] >= 0 else None,
                POWER_KINDS[s.power_kind[i]],
            ),
        ),
        "sources": (s.source_name, lambda i: (s.power_name[s.source_bus[i]], SOURCE_KINDS[s.source_kind[i]])),
        "switches": (s.switch_name, lambda i: (None, TIER_NAMES[s.switch_tier[i]])),
    }
    return table[kind]


@api.route(
    "GET",
    "/site/{kind}",
    summary="The site's entities of one kind, by id, with their parent",
    tag="site",
    params=m.EntityKindParam,
    query=m.Page,
    response=m.EntityPage,
)
def list_entities(params: m.EntityKindParam, query: m.Page = m.Page()) -> m.EntityPage:
    names, about = _entities(live_view().state, params.kind)
    items = []
    for i in _window(len(names), query):
        parent, kind = about(i)
        items.append(m.Entity(entity_id=i, name=names[i], parent=parent, kind=kind))
    return m.EntityPage(total_count=len(names), offset=query.offset, limit=query.limit, items=items)


# ------------------------------------------------------------------ live
def database_reachable(view) -> bool:
    """Whether the live view reaches its database (a view without the notion: yes)."""
    check = getattr(view, "database_reachable", None)
    return bool(check()) if callable(check) else True


def _age_s(ts: datetime | None) -> float | None:
    return None if ts is None else max((datetime.now(UTC) - ts).total_seconds(), 0.0)


@api.route(
    "GET",
    "/live/kpis",
    summary="Site figures of the latest tick, GPU counts and open alerts by severity",
    tag="live",
    response=m.SiteKpis,
)
def get_kpis() -> m.SiteKpis:
    view, s, snap, detail = _tick()
    counts = alert_counts(view.alerts(True))
    alerts = {f"n_alerts_{sev}": counts.get(sev, 0) for sev in ("critical", "warning", "info")}
    alerts["database_reachable_flag"] = database_reachable(view)
    if snap is None:
        none = dict.fromkeys(
            (
                "ts",
                "snapshot_age_s",
                "it_power_mw",
                "cooling_power_mw",
                "facility_power_mw",
                "generation_capacity_mw",
                "generation_n1_capacity_mw",
                "generation_n1_headroom_mw",
                "pue_ratio",
                "outdoor_dry_bulb_c",
                "outdoor_wet_bulb_c",
                "swing_amplitude_mw",
                "swing_ramp_mw_per_s",
            )
        )
        return m.SiteKpis(
            site=s.name, n_gpus=s.n_gpus, n_gpus_throttled=0, n_gpus_down=0, n_gpus_off=0, **none, **alerts
        )
    n1 = detail.balance.generation_n1_capacity_mw if detail is not None else float("nan")
    return m.SiteKpis(
        site=s.name,
        ts=snap.ts,
        snapshot_age_s=_age_s(snap.ts),
        it_power_mw=_f(snap.it_power_mw),
        cooling_power_mw=_f(snap.cooling_power_mw),
        facility_power_mw=_f(snap.facility_power_mw),
        generation_capacity_mw=_f(snap.generation_capacity_mw),
        generation_n1_capacity_mw=_f(n1),
        generation_n1_headroom_mw=_f(n1 - snap.facility_power_mw),
        pue_ratio=_f(snap.pue_ratio),
        outdoor_dry_bulb_c=_f(snap.outdoor_dry_bulb_c),
        outdoor_wet_bulb_c=_f(snap.outdoor_wet_bulb_c),
        swing_amplitude_mw=_f(snap.swing_amplitude_mw),
        swing_ramp_mw_per_s=_f(snap.swing_ramp_mw_per_s),
        n_gpus=s.n_gpus,
        n_gpus_throttled=int((snap.gpu_state == GPU_THROTTLED).sum()),
        n_gpus_down=int((snap.gpu_state == GPU_DOWN).sum()),
        n_gpus_off=int((snap.gpu_state == GPU_OFF).sum()),
        **alerts,
    )


_RACK_ORDER = {
    "rack_power_kw": lambda snap: -snap.rack_power_kw,
    "rack_max_gpu_temp_c": lambda snap: -snap.rack_max_gpu_temp_c,
    "rack_time_to_throttle_s": lambda snap: snap.rack_time_to_throttle_s,
}


@api.route(
    "GET",
    "/live/racks",
    summary="Racks: power, hottest GPU, time to throttle after a pump loss",
    tag="live",
    query=m.RackQuery,
    response=m.RackPage,
    errors=(404,),
)
def list_racks(query: m.RackQuery = m.RackQuery()) -> m.RackPage:
    _, s, snap, _ = _tick()
    racks = np.arange(s.n_racks)
    if query.hall is not None:
        if query.hall not in s.hall_name:
            raise NotFound(f"no hall {query.hall!r} (halls: {', '.join(s.hall_name)})")
        racks = racks[s.rack_hall == s.hall_name.index(query.hall)]
    if snap is not None and query.sort != "name":
        key = np.nan_to_num(_RACK_ORDER[query.sort](snap)[racks], nan=np.inf)  # unknown values last
        racks = racks[np.argsort(key, kind="stable")]
    elif query.sort == "name":
        racks = racks[np.argsort(np.array(s.rack_name, dtype=object)[racks], kind="stable")]
    items = []
    for r in racks[query.offset : query.offset + query.limit]:
        at = (lambda values, r=r: _f(values[r])) if snap is not None else (lambda values: None)
        items.append(
            m.RackState(
                rack_id=int(r),
                rack=s.rack_name[r],
                hall=s.hall_name[s.rack_hall[r]],
                cdu=s.cdu_name[s.rack_cdu[r]],
                rack_power_kw=at(snap.rack_power_kw) if snap else None,
                rack_max_gpu_temp_c=at(snap.rack_max_gpu_temp_c) if snap else None,
                rack_time_to_throttle_s=at(snap.rack_time_to_throttle_s) if snap else None,
            )
        )
    return m.RackPage(
        ts=snap.ts if snap else None, total_count=int(racks.size), offset=query.offset, limit=query.limit, items=items
    )


@api.route(
    "GET",
    "/live/cdus",
    summary="CDUs: temperatures, flow, heat against capacity, pumps running",
    tag="live",
    query=m.Page,
    response=m.CduPage,
)
def list_cdus(query: m.Page = m.Page()) -> m.CduPage:
    _, s, snap, _ = _tick()
    items = []
    for c in _window(s.n_cdus, query):
        if snap is None:
            values = dict.fromkeys(
                (
                    "coolant_supply_temp_c",
                    "coolant_return_temp_c",
                    "coolant_flow_lpm",
                    "cdu_heat_kw",
                    "cdu_capacity_kw",
                    "cdu_capacity_use_frac",
                    "pumps_running_count",
                )
            )
        else:
            cap = float(snap.cdu_capacity_kw[c])
            values = dict(
                coolant_supply_temp_c=_f(snap.coolant_supply_temp_c[c]),
                coolant_return_temp_c=_f(snap.coolant_return_temp_c[c]),
                coolant_flow_lpm=_f(snap.coolant_flow_lpm[c]),
                cdu_heat_kw=_f(snap.cdu_heat_kw[c]),
                cdu_capacity_kw=_f(cap),
                cdu_capacity_use_frac=_f(snap.cdu_heat_kw[c] / cap) if cap > 0 else None,
                pumps_running_count=int(snap.pumps_running_count[c]),
            )
        items.append(m.CduState(cdu_id=c, cdu=s.cdu_name[c], loop=s.loop_name[s.cdu_loop[c]], **values))
    return m.CduPage(
        ts=snap.ts if snap else None, total_count=s.n_cdus, offset=query.offset, limit=query.limit, items=items
    )


@api.route(
    "GET",
    "/live/power",
    summary="Power-tree elements: load, load against usable rating, worst N-1 load",
    tag="live",
    query=m.Page,
    response=m.PowerPage,
)
def list_power(query: m.Page = m.Page()) -> m.PowerPage:
    _, s, snap, _ = _tick()
    items = [
        m.PowerState(
            element_id=e,
            element=s.power_name[e],
            kind=POWER_KINDS[s.power_kind[e]],
            feed_power_kw=_f(snap.feed_power_kw[e]) if snap else None,
            load_frac=_f(snap.load_frac[e]) if snap else None,
            power_n1_load_frac=_f(snap.power_n1_load_frac[e]) if snap else None,
        )
        for e in _window(s.n_power, query)
    ]
    return m.PowerPage(
        ts=snap.ts if snap else None, total_count=s.n_power, offset=query.offset, limit=query.limit, items=items
    )


@api.route(
    "GET",
    "/live/generation",
    summary="Power sources (grid, generators, batteries): output and state",
    tag="live",
    query=m.Page,
    response=m.GenerationPage,
)
def list_generation(query: m.Page = m.Page()) -> m.GenerationPage:
    _, s, snap, _ = _tick()
    items = [
        m.GenerationState(
            source_id=i,
            source=s.source_name[i],
            kind=SOURCE_KINDS[s.source_kind[i]],
            source_power_mw=_f(snap.source_power_mw[i]) if snap else None,
            source_capacity_mw=float(s.source_capacity_mw[i]),
            battery_soc_frac=_f(snap.battery_soc_frac[i]) if snap else None,
        )
        for i in _window(s.n_sources, query)
    ]
    return m.GenerationPage(
        ts=snap.ts if snap else None, total_count=s.n_sources, offset=query.offset, limit=query.limit, items=items
    )


@api.route(
    "GET",
    "/live/sources",
    summary="Telemetry sources and the age of their last good reading",
    tag="live",
    response=m.TelemetrySources,
)
def list_sources() -> m.TelemetrySources:
    ages = live_view().source_ages()
    return m.TelemetrySources(
        items=[m.TelemetrySource(source=name, source_age_s=_f(age)) for name, age in sorted(ages.items())]
    )


@api.route(
    "GET",
    "/live/jobs",
    summary="Training jobs: throughput, goodput, MFU and restart phase",
    tag="live",
    query=m.Page,
    response=m.JobPage,
)
def list_jobs(query: m.Page = m.Page()) -> m.JobPage:
    _, _, snap, _ = _tick()
    jobs = snap.jobs if snap is not None else []
    items = [
        m.JobState(
            name=j.name,
            n_gpus=int(j.gpu_ids.size),
            restart_phase=j.restart_phase,
            step_time_s=_f(j.step_time_s),
            tokens_per_s=_f(j.tokens_per_s),
            goodput_tokens_per_s=_f(j.goodput_tokens_per_s),
            mfu_frac=_f(j.mfu_frac),
            ettr_frac=_f(j.ettr_frac),
            checkpoint_age_s=_f(j.checkpoint_age_s),
            lost_work_s=_f(j.lost_work_s),
            interruptions_total=int(j.interruptions_total),
        )
        for j in jobs[query.offset : query.offset + query.limit]
    ]
    return m.JobPage(
        ts=snap.ts if snap else None, total_count=len(jobs), offset=query.offset, limit=query.limit, items=items
    )
