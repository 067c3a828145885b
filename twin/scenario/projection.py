"""Site-level projection: run the twin under a scenario and report what an operator acts on.

:func:`project` settles the twin under a :class:`~twin.scenario.conditions.Scenario` and
returns a :class:`~twin.scenario.reports.ProjectionReport` (``clustertwin project --json``
prints its :meth:`~twin.reports.Report.as_dict`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta

import numpy as np

from twin.engine.snapshot import GPU_DOWN, GPU_OFF, GPU_THROTTLED, Snapshot
from twin.engine.tick import PlacedJob, TickDetail, TickInputs, TwinEngine
from twin.physics import fabric
from twin.scenario.conditions import Scenario
from twin.scenario.fleetload import FleetLoad
from twin.scenario.reports import (
    ElementLoad,
    FabricFigures,
    GenerationFigures,
    GpuCounts,
    HotGpu,
    HotRack,
    JobFigures,
    N1Violation,
    PolicyFigures,
    ProjectionReport,
    SourceFigures,
    SwingFigures,
    ThrottleTimes,
    UplinkCapacity,
)
from twin.site.catalogue import DATA_DIR
from twin.site.tables import POWER_KINDS, SOURCE_KINDS, SiteTables
from twin.training.jobfile import load_job
from twin.training.sitejob import contiguous_placement, evaluate_site_job

TOP_N = 10
SETTLE_STEP_S = 60.0  # the exact exponential step is stable at any dt; minute steps let the plant follow


def _top(values: np.ndarray, n: int = TOP_N) -> np.ndarray:
    finite = np.flatnonzero(np.isfinite(values))
    return finite[np.argsort(-values[finite], kind="stable")[:n]]


def _placed_job(state: SiteTables, name: str | None) -> PlacedJob | None:
    name = state.default_job if name is None else name
    if not name:
        return None
    spec = load_job(DATA_DIR / "jobs" / f"{name}.toml")
    return PlacedJob(spec, contiguous_placement(state, spec.parallel.n_gpus))


def job_inputs(
    state: SiteTables,
    inputs: TickInputs,
    job: PlacedJob | None,
    idle_nodes_off: bool,
    fleet_util_frac: float | FleetLoad | None = None,
) -> TickInputs:
    """``inputs`` with the placed ``job`` running: its phases drive the swing and the shortfall policy sheds
    the other racks first and the job's last.  The GPUs outside it run the fleet's other work at
    ``fleet_util_frac`` (one utilisation for all, or a :class:`FleetLoad` per GPU; None: they have no
    work, utilisation 0, and with ``idle_nodes_off`` the nodes without a GPU of the job are powered off)."""
    if job is not None:
        busy = np.zeros(state.n_gpus, dtype=bool)
        busy[job.gpu_ids] = True
        other = (
            0.0
            if fleet_util_frac is None
            else fleet_util_frac.on(state)
            if isinstance(fleet_util_frac, FleetLoad)
            else fleet_util_frac
        )
        util = np.where(busy, np.broadcast_to(np.asarray(inputs.gpu_util_frac, dtype=np.float64), busy.shape), other)
        inputs = replace(inputs, jobs=[job], priority_gpus=job.gpu_ids, gpu_util_frac=util)
    if idle_nodes_off and fleet_util_frac is None:
        busy_nodes = np.zeros(state.n_nodes, dtype=bool)
        if job is not None:
            busy_nodes[state.gpu_node[job.gpu_ids]] = True
        failed = np.zeros(state.n_nodes, dtype=bool) if inputs.nodes_off is None else np.asarray(inputs.nodes_off, bool)
        inputs = replace(inputs, nodes_off=~busy_nodes | failed)
    return inputs


def run_scenario(
    state: SiteTables, scenario: Scenario, each_tick: Callable[[Snapshot], None] | None = None
) -> tuple[Snapshot, TickDetail, PlacedJob | None]:
    """Settle the twin for ``scenario.settle_s`` under its conditions.

    Returns the last snapshot, its tick detail and the placed job (None without one);
    ``each_tick`` sees every intermediate snapshot (minute steps), e.g. for a trend.  A scenario
    with layout edits runs on its edited site (``scenario.state``) instead of ``state``.
    """
    state = scenario.state if scenario.state is not None else state
    start = scenario.time - timedelta(seconds=scenario.settle_s)
    job = _placed_job(state, scenario.job)
    inputs = job_inputs(
        state,
        scenario.inputs,
        job,
        state.idle_nodes_off if scenario.idle_nodes_off is None else scenario.idle_nodes_off,
        scenario.fleet_util_frac,
    )
    engine = TwinEngine(state, start=start, settle=False)
    engine.settle(replace(inputs, ts=start))  # settled under the scenario: its job, its failures
    steps = max(int(np.ceil(scenario.settle_s / SETTLE_STEP_S)), 1)
    dt = scenario.settle_s / steps
    snap = None
    for i in range(steps):
        snap = engine.tick(dt, replace(inputs, ts=start + timedelta(seconds=dt * (i + 1))))
        if each_tick is not None:
            each_tick(snap)
    assert snap is not None and engine.detail is not None  # steps >= 1
    return snap, engine.detail, job


def project(state: SiteTables, scenario: Scenario) -> ProjectionReport:
    """Run the twin for ``scenario.settle_s`` under its conditions and report (units in the field names).

    With layout edits the report is about the edited site (``scenario.state``).
    """
    report, _snap, _detail, _job = project_run(state, scenario)
    return report


def project_run(
    state: SiteTables, scenario: Scenario
) -> tuple[ProjectionReport, Snapshot, TickDetail, PlacedJob | None]:
    """:func:`project`'s report with the last snapshot, its tick detail and the placed job."""
    state = scenario.state if scenario.state is not None else state
    snap, detail, job = run_scenario(state, scenario)
    return report_of(state, scenario, snap, detail, job), snap, detail, job


def report_of(
    state: SiteTables, scenario: Scenario, snap: Snapshot, detail: TickDetail, job: PlacedJob | None
) -> ProjectionReport:
    """The :class:`ProjectionReport` of a settled run (its last snapshot and tick detail)."""
    bal = detail.balance
    job_report = _job(state, job, snap) if job else None
    return ProjectionReport(
        site=state.name,
        scenario=scenario.name,
        ts=snap.ts.isoformat(),
        outdoor_dry_bulb_c=snap.outdoor_dry_bulb_c,
        outdoor_wet_bulb_c=snap.outdoor_wet_bulb_c,
        it_power_mw=bal.it_mw,
        distribution_loss_mw=bal.distribution_loss_mw,
        cooling_power_mw=bal.cooling_mw,
        network_power_mw=bal.network_mw,
        facility_power_mw=bal.facility_mw,
        heat_rejected_mw=snap.heat_rejected_mw,
        heat_stored_mw=snap.heat_stored_mw,
        pue_ratio=snap.pue_ratio,
        generation_capacity_mw=bal.generation_capacity_mw,
        generation_n1_capacity_mw=bal.generation_n1_capacity_mw,
        shortfall_mw=bal.shortfall_mw,
        n_gpus_runnable_at_full_power=bal.gpus_at_full_power,
        power_cap_for_all_gpus_w=bal.power_cap_w,
        power_cap_fits_flag=bal.cap_fits,
        overloaded_elements=_elements(state, snap.load_frac, snap.load_frac > 1.0),
        n1_violations=_n1(state, snap, detail.power_n1_worst_by),
        dark_racks=[state.rack_name[r] for r in detail.dark_racks],
        gpus=GpuCounts(
            n_gpus=state.n_gpus,
            n_gpus_throttled=int((snap.gpu_state == GPU_THROTTLED).sum()),
            n_gpus_down=int((snap.gpu_state == GPU_DOWN).sum()),
            n_gpus_off=int((snap.gpu_state == GPU_OFF).sum()),
        ),
        hottest_gpus=[
            HotGpu(
                gpu_id=int(g),
                node=state.node_name[state.gpu_node[g]],
                gpu_index=int(state.gpu_index[g]),
                rack=state.rack_name[state.gpu_rack[g]],
                gpu_temp_c=float(snap.gpu_temp_c[g]),
                throttle_frac=float(snap.throttle_frac[g]),
            )
            for g in _top(snap.gpu_temp_c)
        ],
        hottest_racks=[
            HotRack(
                rack=state.rack_name[r],
                rack_max_gpu_temp_c=float(snap.rack_max_gpu_temp_c[r]),
                rack_power_kw=float(snap.rack_power_kw[r]),
            )
            for r in _top(snap.rack_max_gpu_temp_c)
        ],
        time_to_throttle_s=_time_to_throttle(state, detail.projections_s),
        swing=SwingFigures.of(detail.swing),
        fabric=_fabric(state, snap),
        job=job_report,
        sources=_sources(state, detail),
        shortfall_policy=_policy(state, snap, detail, job_report),
        generation=GenerationFigures.of(detail.generation, state.source_name) if detail.generation else None,
    )


def _sources(state: SiteTables, detail: TickDetail) -> list[SourceFigures]:
    """Per source: output, derated capacity, charge, and its share of the training swing against its limits."""
    assert detail.supply is not None and detail.swing_share is not None  # set by every tick
    d, share = detail.supply.dispatch, detail.swing_share
    out = []
    for i, name in enumerate(state.source_name):
        battery = state.source_kind[i] == SOURCE_KINDS.index("battery")
        out.append(
            SourceFigures(
                source=name,
                kind=SOURCE_KINDS[state.source_kind[i]],
                live_flag=bool(detail.source_live[i]),
                source_power_mw=float(d.source_power_mw[i]),
                source_capacity_mw=float(d.capacity_mw[i]),
                battery_soc_frac=float(d.battery_soc_frac[i]) if battery else None,
                iso_8528_class=(state.source_iso_class[i] or None) if state.source_iso_class else None,
                swing_share_mw=float(share.share_mw[i]),
                swing_ramp_mw_per_s=float(share.ramp_mw_per_s[i]),
                swing_limit_mw=float(share.limit_mw[i]),
                ramp_limit_mw_per_s=float(state.source_ramp_mw_per_s[i]),
                over_limit_flag=bool(share.over_limit[i]),
            )
        )
    return out


def _policy(state: SiteTables, snap: Snapshot, detail: TickDetail, job: JobFigures | None) -> PolicyFigures:
    """The shortfall policy's action in force at the end of the run, and the job's resulting throughput."""
    act, sup = detail.policy_in_force, detail.supply
    assert sup is not None and detail.swing_share is not None  # set by every tick
    return PolicyFigures(
        policy=state.shortfall_policy,
        policy_response_s=state.policy_response_s,
        policy_active_flag=act.active,
        policy_gpu_cap_w=act.gpu_cap_w if np.isfinite(act.gpu_cap_w) else None,
        power_brake_flag=act.brake,
        n_racks_shed=act.racks_shed,
        n_gpus_shed=snap.n_gpus_shed,
        policy_pending_s=detail.policy.pending_s,
        battery_power_mw=float(sup.dispatch.source_power_mw[state.source_kind == SOURCE_KINDS.index("battery")].sum()),
        ups_power_mw=sup.ups_power_mw,
        unserved_mw=sup.unserved_mw,
        ups_ride_through_s=sup.ups_ride_through_s,
        battery_exhaust_s=detail.swing_share.battery_exhaust_s,
        swing_unfollowed_mw=detail.swing_share.unfollowed_mw,
        swing_sources_within_limits_flag=detail.swing_share.within_limits,
        job_step_time_s=job.step_time_s if job else None,
        job_tokens_per_s=job.tokens_per_s if job else None,
    )


def _elements(state: SiteTables, frac: np.ndarray, mask: np.ndarray) -> list[ElementLoad]:
    idx = np.flatnonzero(mask)
    idx = idx[np.argsort(-frac[idx], kind="stable")]
    return [
        ElementLoad(element=state.power_name[e], kind=POWER_KINDS[state.power_kind[e]], load_frac=float(frac[e]))
        for e in idx
    ]


def _n1(state: SiteTables, snap: Snapshot, worst_by: np.ndarray) -> list[N1Violation]:
    idx = np.flatnonzero(snap.power_n1_load_frac > 1.0)
    idx = idx[np.argsort(-snap.power_n1_load_frac[idx], kind="stable")][:TOP_N]
    return [
        N1Violation(
            element=state.power_name[e],
            kind=POWER_KINDS[state.power_kind[e]],
            load_frac=float(snap.load_frac[e]),
            power_n1_load_frac=float(snap.power_n1_load_frac[e]),
            after_loss_of=state.power_name[worst_by[e]] if worst_by[e] >= 0 else None,
        )
        for e in idx
    ]


def _time_to_throttle(state: SiteTables, proj: dict[str, np.ndarray]) -> dict[str, ThrottleTimes]:
    out = {}
    for key, values in proj.items():
        finite = values[np.isfinite(values)]
        worst = _top(-values, 3)
        out[key] = ThrottleTimes(
            min_s=float(finite.min()) if finite.size else None,
            median_s=float(np.median(finite)) if finite.size else None,
            n_racks_never=int((~np.isfinite(values)).sum()),
            worst_racks=[state.rack_name[r] for r in worst],
        )
    return out


def _fabric(state: SiteTables, snap: Snapshot) -> FabricFigures:
    up = snap.link_up_flag
    cap = fabric.tier_capacity_gbps(state, fabric.link_alive(state, up))
    return FabricFigures(
        n_links_down=int((~up).sum()),
        uplink_capacity_tbps=UplinkCapacity(
            leaf_to_spine=cap["leaf_spine"] / 1000.0, spine_to_core=cap["spine_core"] / 1000.0
        ),
        nic_injection_tbps=cap["injection"] / 1000.0,
        mean_uplink_util_frac=float(snap.link_util_frac[up].mean()) if up.any() else 0.0,
    )


def _job(state: SiteTables, job: PlacedJob, snap: Snapshot) -> JobFigures:
    down = snap.gpu_state == GPU_DOWN
    res = evaluate_site_job(state, job.spec, job.gpu_ids, np.where(down, 0.0, snap.throttle_frac), snap.link_up_flag)
    st = res.status
    return JobFigures(
        name=st.name,
        n_gpus=int(st.gpu_ids.size),
        step_time_s=st.step_time_s,
        tokens_per_s=st.tokens_per_s,
        gpu_model_tflops=st.gpu_model_tflops,
        mfu_frac=st.mfu_frac,
        goodput_tokens_per_s=st.goodput_tokens_per_s,
        ettr_frac=st.ettr_frac,
        checkpoint_interval_s=st.checkpoint_interval_s,
        breakdown_s=st.breakdown_s,
        dp_busbw_gbps=res.fabric["dp"].busbw_gbps,
        fabric_limiting_tier=res.fabric["dp"].limiting_tier,
        bottleneck_racks=[state.rack_name[r] for r in st.bottleneck_racks[:TOP_N]],
        drain_gain_frac=st.drain_gain_frac,
    )
