"""A hand-built SiteTables small enough to check by hand (tests of the physical models).

4 racks × 2 nodes × 8 H100 = 64 GPUs, one in-rack CDU per rack, one plant and loop,
and a 2N power tree::

    SG-A (grid 1 MW) ─ TX-A ─ UPS-A ─┬ BW-A1 ── racks 0, 1 (A feed)
                                     └ BW-A2 ── racks 2, 3 (A feed)
    SG-B (gen 1 MW)  ─ TX-B ─ UPS-B ─┬ BW-B1 ── racks 0, 1 (B feed)
                                     └ BW-B2 ── rack 2 (B feed); rack 3 is single-fed

Element ids: SG-A 0, SG-B 1, TX-A 2, TX-B 3, UPS-A 4, UPS-B 5, BW-A1 6, BW-A2 7,
BW-B1 8, BW-B2 9.  One leaf per rack, one spine, one core (fabric is not under test).
"""

from __future__ import annotations

import numpy as np

from twin.site.tables import CduSpec, GpuSpec, SiteTables

H100 = GpuSpec(
    name="H100-SXM5-80GB",
    tdp_w=700.0,
    min_power_limit_w=200.0,
    idle_power_w=85.0,
    peak_bf16_tflops=989.0,
    max_sm_clock_mhz=1980.0,
    max_operating_temp_c=87.0,
    slowdown_temp_c=89.0,
    shutdown_temp_c=92.0,
    hbm_max_temp_c=95.0,
    r_th_die_c_per_w=0.035,
    r_th_hbm_c_per_w=0.20,
    heat_capacity_j_per_k=750.0,
    hbm_gb=80.0,
    nvlink_gbps=3600.0,
)
CDU = CduSpec(
    name="InRack-100kW",
    placement="in-rack",
    capacity_curve_supply_c=(25.0, 32.0, 40.0, 45.0),
    capacity_curve_kw=(120.0, 100.0, 60.0, 35.0),
    pumps=2,
    pumps_required=1,
    pump_power_w=750.0,
    design_flow_lpm=150.0,
    approach_k=4.0,
    pump_failover_s=5.0,
    coolant="PG25",
    loop_volume_l=60.0,
)
A1, A2, B1, B2 = 6, 7, 8, 9


def tiny_site(grid_mw: float = 1.0, gen_mw: float = 1.0, busway_kw: float = 100.0) -> SiteTables:
    """The site in the module docstring; ratings are parameters for overload tests."""
    n_racks, nodes_per_rack, gpus_per_node = 4, 2, 8
    n_nodes = n_racks * nodes_per_rack
    n_gpus = n_nodes * gpus_per_node
    gpu_node = np.repeat(np.arange(n_nodes), gpus_per_node).astype(np.int32)
    node_rack = np.repeat(np.arange(n_racks), nodes_per_rack).astype(np.int32)
    i32 = lambda v: np.asarray(v, dtype=np.int32)  # noqa: E731
    f64 = lambda v: np.asarray(v, dtype=np.float64)  # noqa: E731
    return SiteTables(
        name="tiny",
        description="hand-built test site",
        source_file="<tests>",
        gpu_specs=[H100],
        cdu_specs=[CDU],
        hall_name=["H1"],
        row_name=["R1"],
        row_hall=i32([0]),
        rack_name=[f"R1-{i}" for i in range(n_racks)],
        rack_row=i32([0] * n_racks),
        rack_hall=i32([0] * n_racks),
        rack_x_m=f64(np.arange(n_racks) * 0.6),
        rack_y_m=f64([0.0] * n_racks),
        rack_orientation_deg=f64([0.0] * 4),
        rack_array=i32([0] * n_racks),
        rack_type=["test"] * n_racks,
        rack_cdu=i32(np.arange(n_racks)),
        rack_feed_a=i32([A1, A1, A2, A2]),
        rack_feed_b=i32([B1, B1, B2, -1]),
        rack_rated_kw=f64([80.0] * n_racks),
        node_name=[f"n{i}" for i in range(n_nodes)],
        node_bmc=[f"bmc{i}" for i in range(n_nodes)],
        node_rack=node_rack,
        node_slot=i32(np.tile(np.arange(nodes_per_rack), n_racks)),
        node_psus=i32([4] * n_nodes),
        node_psus_required=i32([2] * n_nodes),
        node_psu_rating_w=f64([5250.0] * n_nodes),
        node_base_power_w=f64([1900.0] * n_nodes),
        node_idle_base_power_w=f64([900.0] * n_nodes),
        gpu_node=gpu_node,
        gpu_rack=node_rack[gpu_node],
        gpu_index=i32(np.tile(np.arange(gpus_per_node), n_nodes)),
        gpu_spec=np.zeros(n_gpus, dtype=np.int16),
        plant_name=["P1"],
        plant_capacity_kw=f64([500.0]),
        plant_supply_setpoint_c=f64([25.0]),
        plant_design_wet_bulb_c=f64([26.0]),
        plant_tower_approach_k=f64([4.0]),
        plant_chiller_count=i32([2]),
        plant_chiller_kw=f64([250.0]),
        plant_cop=f64([6.0]),
        loop_name=["L1"],
        loop_plant=i32([0]),
        loop_capacity_kw=f64([500.0]),
        loop_flow_lpm=f64([720.0]),
        cdu_name=[f"CDU-{i}" for i in range(n_racks)],
        cdu_loop=i32([0] * n_racks),
        cdu_spec=np.zeros(n_racks, dtype=np.int16),
        source_name=["GRID", "GEN"],
        source_kind=np.array([0, 1], dtype=np.int8),
        source_capacity_mw=f64([grid_mw, gen_mw]),
        source_energy_mwh=f64([0.0, 0.0]),
        source_ramp_mw_per_s=f64([0.5, 0.05]),
        source_bus=i32([0, 1]),
        power_name=["SG-A", "SG-B", "TX-A", "TX-B", "UPS-A", "UPS-B", "BW-A1", "BW-A2", "BW-B1", "BW-B2"],
        power_kind=np.array([0, 0, 1, 1, 2, 2, 3, 3, 3, 3], dtype=np.int8),
        power_parent=i32([-1, -1, 0, 1, 2, 3, 4, 4, 5, 5]),
        power_side=np.array([0, 1, 0, 1, 0, 1, 0, 0, 1, 1], dtype=np.int8),
        power_rating_kw=f64([1000.0, 1000.0, 500.0, 500.0, 400.0, 400.0] + [busway_kw] * 4),
        power_max_util_frac=f64([1.0] * 10),
        power_efficiency_frac=f64([1.0, 1.0, 0.99, 0.99, 0.97, 0.97, 1.0, 1.0, 1.0, 1.0]),
        power_voltage_v=f64([13800.0] * 2 + [415.0] * 8),
        power_phases=np.full(10, 3, dtype=np.int8),
        power_depth=np.array([0, 0, 1, 1, 2, 2, 3, 3, 3, 3], dtype=np.int8),
        switch_name=["L0", "L1", "L2", "L3", "S0", "C0"],
        switch_tier=np.array([0, 0, 0, 0, 1, 2], dtype=np.int8),
        switch_pod=i32([0, 0, 0, 0, 0, -1]),
        switch_plane=i32([0, 0, 0, 0, 0, 0]),
        switch_ports=i32([64] * 6),
        link_a=i32([0, 1, 2, 3, 4]),
        link_b=i32([4, 4, 4, 4, 5]),
        link_gbps=f64([6400.0] * 4 + [12800.0]),
        gpu_leaf=node_rack[gpu_node].copy(),
        nic_gbps=400.0,
        fabric_rails=8,
        fabric_pod_gpus=64,
        fabric_leaf_oversubscription=1.0,
        fabric_spine_oversubscription=1.0,
        latitude_deg=35.06,
        longitude_deg=-90.09,
        weather="memphis",
        site_overhead_mw=0.01,
    )
