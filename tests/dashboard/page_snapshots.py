"""Plausible snapshots for testing the cooling, power, fabric and jobs pages.

``site(name)`` loads a reference site with :func:`twin.site.load.load_site`; while that
loader is missing it falls back to :func:`grid_site`, a small regular site built
here.  :func:`snapshot` fills every Snapshot array with values in their physical
ranges (seeded, so tests are repeatable).  Test data only: the app never uses it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from twin.engine.snapshot import GPU_DOWN, GPU_OK, GPU_THROTTLED, JobStatus, Snapshot
from twin.site.tables import TIER_CORE, TIER_LEAF, TIER_SPINE, CduSpec, GpuSpec, SiteTables

H100 = GpuSpec(
    name="H100-SXM5",
    tdp_w=700.0,
    min_power_limit_w=200.0,
    idle_power_w=70.0,
    peak_bf16_tflops=989.0,
    max_sm_clock_mhz=1980.0,
    max_operating_temp_c=87.0,
    slowdown_temp_c=87.0,
    shutdown_temp_c=92.0,
    hbm_max_temp_c=95.0,
    r_th_die_c_per_w=0.045,
    r_th_hbm_c_per_w=0.05,
    heat_capacity_j_per_k=600.0,
    hbm_gb=80.0,
    nvlink_gbps=7200.0,
)
IN_RACK_CDU = CduSpec(
    name="in-rack-100kw",
    placement="in-rack",
    capacity_curve_supply_c=(32.0, 40.0),
    capacity_curve_kw=(100.0, 60.0),
    pumps=2,
    pumps_required=1,
    pump_power_w=1500.0,
    design_flow_lpm=150.0,
    approach_k=4.0,
    pump_failover_s=5.0,
    coolant="PG25",
    loop_volume_l=60.0,
)


def site(name: str = "demo") -> SiteTables:
    """A reference site: the real loader when present, else a regular grid site."""
    try:
        from twin.site.load import load_site

        return load_site(name)
    except (ImportError, LookupError) as err:  # loader or site file not there yet
        if "no such site" not in str(err) and not isinstance(err, ImportError):
            raise
    except Exception as err:  # noqa: BLE001 - twin.site.errors.SiteError for a missing file
        if "no such site" not in str(err):
            raise
    if name == "colossus":
        return grid_site(halls=4, rows_per_hall=14, racks_per_row=28, racks_per_array=8, arrays_per_pod=8)
    return grid_site()


def grid_site(
    halls: int = 2,
    rows_per_hall: int = 2,
    racks_per_row: int = 8,
    racks_per_array: int = 4,
    arrays_per_pod: int = 2,
) -> SiteTables:
    """A regular site: in-rack CDUs, A/B power tree, rail-optimised 3-tier fabric."""
    n_rows = halls * rows_per_hall
    n_racks = n_rows * racks_per_row
    rack_row = np.repeat(np.arange(n_rows, dtype=np.int32), racks_per_row)
    row_hall = (np.arange(n_rows) // rows_per_hall).astype(np.int32)
    rack_hall = row_hall[rack_row]
    rack_in_row = np.tile(np.arange(racks_per_row), n_rows)
    rack_x_m = rack_in_row * 0.8 + rack_hall * (racks_per_row * 0.8 + 10.0)
    rack_y_m = (rack_row % rows_per_hall) * 3.0
    rack_array = (np.arange(n_racks) // racks_per_array).astype(np.int32)
    n_arrays = int(rack_array.max()) + 1

    nodes_per_rack, gpus_per_node = 8, 8
    n_nodes = n_racks * nodes_per_rack
    node_rack = np.repeat(np.arange(n_racks, dtype=np.int32), nodes_per_rack)
    gpu_node = np.repeat(np.arange(n_nodes, dtype=np.int32), gpus_per_node)
    gpu_rack = node_rack[gpu_node]
    gpu_index = np.tile(np.arange(gpus_per_node, dtype=np.int32), n_nodes)

    # cooling: one plant per hall, two loops per hall, one CDU in each rack
    loop_hall = np.repeat(np.arange(halls), 2)
    rack_loop = rack_hall * 2 + (rack_row % 2)

    # power: per hall an A and a B switchgear, 2 transformers each, 2 UPS each, busway per row-half
    names, kinds, parents, sides = [], [], [], []

    def add(name: str, kind: int, parent: int, side: int) -> int:
        names.append(name)
        kinds.append(kind)
        parents.append(parent)
        sides.append(side)
        return len(names) - 1

    rack_feed = np.zeros((2, n_racks), dtype=np.int32)
    switchgear_ids = []
    for h in range(halls):
        for side, letter in enumerate("AB"):
            sg = add(f"H{h + 1}-SWG-{letter}", 0, -1, side)
            switchgear_ids.append(sg)
            hall_racks = np.flatnonzero(rack_hall == h)
            for t, tr_racks in enumerate(np.array_split(hall_racks, 2)):
                tr = add(f"H{h + 1}-TX-{letter}{t + 1}", 1, sg, side)
                for u, ups_racks in enumerate(np.array_split(tr_racks, 2)):
                    ups = add(f"H{h + 1}-UPS-{letter}{t + 1}{u + 1}", 2, tr, side)
                    for b, bw_racks in enumerate(np.array_split(ups_racks, 2)):
                        bw = add(f"H{h + 1}-BW-{letter}{t + 1}{u + 1}{b + 1}", 3, ups, side)
                        rack_feed[side, bw_racks] = bw
    kinds_arr = np.array(kinds, dtype=np.int8)
    rating = np.choose(kinds_arr, [8000.0, 4000.0, 2000.0, 1000.0]) * racks_per_row * rows_per_hall / 16
    n_sources = 2 + halls * 2
    source_kind = np.array([0, 0] + [1] * halls + [2] * halls, dtype=np.int8)

    # fabric: a leaf per (array, rail); spines per pod (one per plane); core groups
    rails = gpus_per_node
    gpu_array = rack_array[gpu_rack]
    gpu_leaf = (gpu_array * rails + gpu_index).astype(np.int32)
    n_leaves = n_arrays * rails
    n_pods = (n_arrays + arrays_per_pod - 1) // arrays_per_pod
    planes = 8
    leaf_pod = (np.arange(n_leaves) // rails) // arrays_per_pod
    spine_ids = n_leaves + np.arange(n_pods * planes)
    core_ids = n_leaves + n_pods * planes + np.arange(planes * 2)
    la, lb = [], []
    for leaf in range(n_leaves):
        for k in range(planes):
            la.append(leaf)
            lb.append(spine_ids[leaf_pod[leaf] * planes + k])
    for p in range(n_pods):
        for k in range(planes):
            for c in range(2):
                la.append(spine_ids[p * planes + k])
                lb.append(core_ids[k * 2 + c])
    n_switches = n_leaves + n_pods * planes + planes * 2
    switch_tier = np.array(
        [TIER_LEAF] * n_leaves + [TIER_SPINE] * (n_pods * planes) + [TIER_CORE] * planes * 2, dtype=np.int8
    )
    switch_pod = np.concatenate([leaf_pod, np.repeat(np.arange(n_pods), planes), -np.ones(planes * 2, int)]).astype(
        np.int32
    )
    switch_plane = np.concatenate(
        [np.arange(n_leaves) % rails, np.tile(np.arange(planes), n_pods), np.repeat(np.arange(planes), 2)]
    ).astype(np.int32)
    switch_name = (
        [f"leaf-{i}" for i in range(n_leaves)]
        + [f"spine-p{p}-{k}" for p in range(n_pods) for k in range(planes)]
        + [f"core-{k}-{c}" for k in range(planes) for c in range(2)]
    )

    return SiteTables(
        name="grid",
        description="regular test site",
        source_file="(built in tests)",
        gpu_specs=[H100],
        cdu_specs=[IN_RACK_CDU],
        hall_name=[f"Hall {h + 1}" for h in range(halls)],
        row_name=[f"H{row_hall[r] + 1}-R{r % rows_per_hall + 1}" for r in range(n_rows)],
        row_hall=row_hall,
        rack_name=[
            f"H{rack_hall[r] + 1}-R{rack_row[r] % rows_per_hall + 1}-{rack_in_row[r] + 1:02d}" for r in range(n_racks)
        ],
        rack_row=rack_row,
        rack_hall=rack_hall,
        rack_x_m=rack_x_m,
        rack_y_m=rack_y_m,
        rack_orientation_deg=np.zeros(n_racks),
        rack_array=rack_array,
        rack_type=["dlc-h100"] * n_racks,
        rack_cdu=np.arange(n_racks, dtype=np.int32),
        rack_feed_a=rack_feed[0],
        rack_feed_b=rack_feed[1],
        rack_rated_kw=np.full(n_racks, 82.0),
        node_name=[f"node{i:05d}" for i in range(n_nodes)],
        node_bmc=[f"10.0.{i // 250}.{i % 250}" for i in range(n_nodes)],
        node_rack=node_rack,
        node_slot=np.tile(np.arange(nodes_per_rack, dtype=np.int32), n_racks),
        node_psus=np.full(n_nodes, 4, np.int32),
        node_psus_required=np.full(n_nodes, 3, np.int32),
        node_psu_rating_w=np.full(n_nodes, 3300.0),
        node_base_power_w=np.full(n_nodes, 2400.0),
        node_idle_base_power_w=np.full(n_nodes, 900.0),
        gpu_node=gpu_node,
        gpu_rack=gpu_rack,
        gpu_index=gpu_index,
        gpu_spec=np.zeros(n_nodes * gpus_per_node, np.int16),
        plant_name=[f"Plant {h + 1}" for h in range(halls)],
        plant_capacity_kw=np.full(halls, 100.0 * n_racks / halls * 1.3),
        plant_supply_setpoint_c=np.full(halls, 24.0),
        plant_design_wet_bulb_c=np.full(halls, 26.0),
        plant_tower_approach_k=np.full(halls, 4.0),
        plant_chiller_count=np.full(halls, 4, np.int32),
        plant_chiller_kw=np.full(halls, 2000.0),
        plant_cop=np.full(halls, 6.0),
        loop_name=[f"Loop {i + 1}" for i in range(halls * 2)],
        loop_plant=loop_hall.astype(np.int32),
        loop_capacity_kw=np.full(halls * 2, 100.0 * n_racks / halls / 2 * 1.2),
        loop_flow_lpm=np.full(halls * 2, 1.5 * 100.0 * n_racks / halls / 2),
        cdu_name=[f"CDU-{r}" for r in range(n_racks)],
        cdu_loop=rack_loop.astype(np.int32),
        cdu_spec=np.zeros(n_racks, np.int16),
        source_name=["Grid 1", "Grid 2"]
        + [f"Gen {h + 1}" for h in range(halls)]
        + [f"Battery {h + 1}" for h in range(halls)],
        source_kind=source_kind,
        source_capacity_mw=np.where(source_kind == 0, 0.06 * n_racks, 0.02 * n_racks).astype(float),
        source_energy_mwh=np.where(source_kind == 2, 0.05 * n_racks, 0.0),
        source_ramp_mw_per_s=np.choose(source_kind, [1.0, 0.2, 20.0]).astype(float),
        source_bus=np.array([switchgear_ids[i % len(switchgear_ids)] for i in range(n_sources)], np.int32),
        power_name=names,
        power_kind=kinds_arr,
        power_parent=np.array(parents, np.int32),
        power_side=np.array(sides, np.int8),
        power_rating_kw=rating,
        power_max_util_frac=np.full(len(names), 0.8),
        power_efficiency_frac=np.choose(kinds_arr, [0.999, 0.985, 0.97, 0.998]).astype(float),
        power_voltage_v=np.choose(kinds_arr, [13800.0, 415.0, 415.0, 415.0]).astype(float),
        power_phases=np.full(len(names), 3, np.int8),
        power_depth=kinds_arr.copy(),
        switch_name=switch_name,
        switch_tier=switch_tier,
        switch_pod=switch_pod,
        switch_plane=switch_plane,
        switch_ports=np.full(n_switches, 128, np.int32),
        link_a=np.array(la, np.int32),
        link_b=np.array(lb, np.int32),
        link_gbps=np.full(len(la), 400.0),
        gpu_leaf=gpu_leaf,
        nic_gbps=400.0,
        fabric_rails=rails,
        fabric_pod_gpus=arrays_per_pod * racks_per_array * 64,
        fabric_leaf_oversubscription=1.0,
        fabric_spine_oversubscription=1.0,
    )


def snapshot(state: SiteTables, seed: int = 0, job_gpu_frac: float = 0.75) -> Snapshot:
    """A Snapshot with every array filled with plausible values for ``state``."""
    rng = np.random.default_rng(seed)
    n_gpus, n_racks, n_cdus = state.n_gpus, state.n_racks, state.n_cdus
    gpu_power_w = rng.uniform(450.0, 700.0, n_gpus)
    gpu_state = np.full(n_gpus, GPU_OK, np.int8)
    gpu_state[rng.random(n_gpus) < 0.01] = GPU_THROTTLED
    gpu_state[rng.random(n_gpus) < 0.002] = GPU_DOWN
    gpu_temp_c = 40.0 + gpu_power_w * 0.05 + rng.normal(0, 2, n_gpus)
    rack_power_kw = (
        np.bincount(state.gpu_rack, gpu_power_w, n_racks) / 1e3
        + np.bincount(state.node_rack, state.node_base_power_w, n_racks) / 1e3
    )
    rack_max = np.full(n_racks, -np.inf)
    np.maximum.at(rack_max, state.gpu_rack, gpu_temp_c)
    rack_ttt = rng.uniform(20.0, 600.0, n_racks)
    rack_ttt[rng.random(n_racks) < 0.1] = np.inf

    cdu_heat_kw = np.bincount(state.rack_cdu, rack_power_kw, n_cdus)
    cdu_supply = rng.uniform(30.0, 36.0, n_cdus)
    curve_c = np.array(state.cdu_specs[0].capacity_curve_supply_c)
    curve_kw = np.array(state.cdu_specs[0].capacity_curve_kw)
    cdu_capacity_kw = np.interp(cdu_supply, curve_c, curve_kw) * np.bincount(state.rack_cdu, minlength=n_cdus).clip(
        1, None
    )
    cdu_flow = cdu_heat_kw * 1.5 + rng.normal(0, 2, n_cdus)
    cdu_return = cdu_supply + cdu_heat_kw / (cdu_flow / 60.0 * 4.0)
    n_loops = len(state.loop_name)
    loop_heat = np.bincount(state.cdu_loop, cdu_heat_kw, n_loops)
    loop_supply = rng.uniform(24.0, 26.0, n_loops)

    n_power = state.n_power
    feed_power_kw = np.zeros(n_power)
    for feed in (state.rack_feed_a, state.rack_feed_b):
        valid = feed >= 0
        feed_power_kw += np.bincount(feed[valid], rack_power_kw[valid] / 2.0, n_power)
    for depth in range(int(state.power_depth.max()), 0, -1):
        idx = np.flatnonzero(state.power_depth == depth)
        np.add.at(feed_power_kw, state.power_parent[idx], feed_power_kw[idx])
    usable = state.power_rating_kw * state.power_max_util_frac
    load_frac = feed_power_kw / usable
    source_cap = state.source_capacity_mw
    it_mw = float(rack_power_kw.sum() / 1e3)
    source_power_mw = source_cap * min(1.0, it_mw * 1.25 / source_cap.sum())
    soc = np.where(state.source_kind == 2, rng.uniform(0.4, 0.95, state.n_sources), np.nan)

    link_up_flag = rng.random(state.n_links) > 0.002
    link_util = np.where(link_up_flag, rng.beta(2, 3, state.n_links), 0.0)

    job_gpus = np.arange(int(n_gpus * job_gpu_frac), dtype=np.int32)
    bottleneck = np.unique(state.gpu_rack[job_gpus[gpu_state[job_gpus] == GPU_THROTTLED]])[:5].astype(np.int32)
    breakdown = {
        "compute_s": 6.1,
        "tp_comm_s": 0.4,
        "pp_comm_s": 0.3,
        "dp_comm_s": 0.9,
        "bubble_s": 0.7,
        "throttle_loss_s": 0.25,
    }
    step = sum(breakdown.values())
    job = JobStatus(
        name="pretrain-70b",
        gpu_ids=job_gpus,
        step_time_s=step,
        tokens_per_s=4e6 * job_gpus.size / 1e5 / step * 8,
        gpu_model_tflops=420.0,
        mfu_frac=0.425,
        goodput_tokens_per_s=3.6e6 * job_gpus.size / 1e5,
        ettr_frac=0.9,
        checkpoint_interval_s=1800.0,
        breakdown_s=breakdown,
        bottleneck_racks=bottleneck,
        drain_gain_frac=0.03,
    )
    return Snapshot(
        ts=datetime(2026, 11, 29, 15, 0, tzinfo=UTC),
        gpu_temp_c=gpu_temp_c,
        hbm_temp_c=gpu_temp_c + 5.0,
        gpu_power_w=gpu_power_w,
        gpu_util_frac=rng.uniform(0.8, 1.0, n_gpus),
        sm_clock_mhz=np.full(n_gpus, 1980.0),
        throttle_frac=np.where(gpu_state == GPU_THROTTLED, 0.8, 1.0),
        gpu_state=gpu_state,
        last_xid_code=np.zeros(n_gpus, np.int16),
        rack_power_kw=rack_power_kw,
        rack_max_gpu_temp_c=rack_max,
        rack_time_to_throttle_s=rack_ttt,
        coolant_supply_temp_c=cdu_supply,
        coolant_return_temp_c=cdu_return,
        coolant_flow_lpm=cdu_flow,
        cdu_heat_kw=cdu_heat_kw,
        cdu_capacity_kw=cdu_capacity_kw,
        pumps_running_count=np.where(rng.random(n_cdus) < 0.02, 1, 2).astype(np.int8),
        loop_supply_temp_c=loop_supply,
        loop_return_temp_c=loop_supply + 10.0,
        loop_heat_kw=loop_heat,
        feed_power_kw=feed_power_kw,
        load_frac=load_frac,
        power_n1_load_frac=np.minimum(load_frac * 2.0, 1.6),
        source_power_mw=source_power_mw,
        battery_soc_frac=soc,
        link_up_flag=link_up_flag,
        link_util_frac=link_util,
        it_power_mw=it_mw,
        cooling_power_mw=it_mw * 0.2,
        facility_power_mw=it_mw * 1.25,
        generation_capacity_mw=float(source_cap.sum()),
        pue_ratio=1.25,
        outdoor_wet_bulb_c=24.0,
        outdoor_dry_bulb_c=31.0,
        swing_amplitude_mw=it_mw * 0.4,
        swing_ramp_mw_per_s=it_mw * 0.15,
        jobs=[job],
        source_age_s={"dcgm": 1.0, "redfish": 4.0},
    )


def engine_snapshot(name: str = "demo"):
    """``(state, snapshot, tick detail)`` from one tick of the real twin engine, with the
    site's default job placed and evaluated as the live hub does."""
    from twin.engine.tick import TickInputs, TwinEngine
    from twin.training.jobfile import load_job
    from twin.training.sitejob import contiguous_placement, evaluate_site_job

    state = site(name)
    engine = TwinEngine(state)
    spec = gpu_ids = None
    if state.default_job:
        spec = load_job(Path(__file__).resolve().parents[2] / "data" / "jobs" / f"{state.default_job}.toml")
        gpu_ids = contiguous_placement(state, spec.parallel.n_gpus)
    inputs = TickInputs(priority_gpus=gpu_ids)  # a shortfall policy sheds the job's racks last
    engine.settle(inputs)
    snap = engine.tick(1.0, inputs)
    if spec is not None:
        snap.jobs = [evaluate_site_job(state, spec, gpu_ids, snap.throttle_frac, snap.link_up_flag).status]
    return state, snap, engine.detail
