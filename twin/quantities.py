"""Canonical quantity names: the one list of what the twin measures and in which unit.

Every array in the twin state (:class:`twin.engine.snapshot.Snapshot`), every stored
telemetry field, every normalised ingest sample and every number of the ``--json``
reports uses one of these names.  The suffix carries the unit (habit 1 of
CONVENTIONS.md); :data:`UNIT_SUFFIXES` lists the accepted ones and
:data:`CATEGORICAL_FORMS` the forms of codes, states, flags and counts.  Fields that are
not quantities (names, ids, timestamps, nested records) are listed in
:data:`NOT_QUANTITIES` instead, so that nothing is left out silently.

``README.md`` carries the same table; ``tests/twin/test_quantities.py`` checks the two
agree, so edit here and regenerate with ``clustertwin units --markdown``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Quantity:
    """One canonical quantity: its name, unit symbol, entity kind and meaning."""

    name: str
    unit: str
    entity: str
    description: str


_Q = Quantity

QUANTITIES: tuple[Quantity, ...] = (
    # GPU
    _Q("gpu_temp_c", "°C", "gpu", "GPU die (core) temperature"),
    _Q("hbm_temp_c", "°C", "gpu", "HBM memory temperature"),
    _Q("gpu_power_w", "W", "gpu", "GPU board power"),
    _Q("gpu_energy_j", "J", "gpu", "GPU energy counter since driver load"),
    _Q("gpu_util_frac", "1", "gpu", "fraction of time a kernel was running"),
    _Q("tensor_active_frac", "1", "gpu", "tensor-pipe active ratio (profiling counter)"),
    _Q("sm_clock_mhz", "MHz", "gpu", "SM clock"),
    _Q("mem_clock_mhz", "MHz", "gpu", "memory clock"),
    _Q("power_limit_w", "W", "gpu", "enforced board power limit"),
    _Q("fb_used_mib", "MiB", "gpu", "frame-buffer memory in use"),
    _Q("clock_event_mask", "bitmask", "gpu", "clock-event (throttle) reason bits, NVML layout"),
    _Q("last_xid_code", "code", "gpu", "last XID error code, 0 if none"),
    _Q("ecc_dbe_total", "count", "gpu", "double-bit ECC errors (volatile)"),
    _Q("pcie_replay_total", "count", "gpu", "PCIe replay counter"),
    _Q("nvlink_crc_error_total", "count", "gpu", "NVLink CRC flit errors"),
    _Q("throttle_frac", "1", "gpu", "clock/throughput factor after throttling (1 = full speed)"),
    _Q("gpu_state", "state", "gpu", "0 running, 1 throttled, 2 down (a fault), 3 powered off on purpose"),
    # Node
    _Q("node_power_w", "W", "node", "node input power at the PSUs"),
    _Q("cpu_temp_c", "°C", "node", "CPU temperature"),
    _Q("inlet_temp_c", "°C", "node", "air inlet temperature"),
    _Q("fan_speed_rpm", "rpm", "node", "fan speed"),
    _Q("psu_power_w", "W", "psu", "PSU input power"),
    # Rack and CDU
    _Q("rack_power_kw", "kW", "rack", "rack IT input power"),
    _Q("rack_max_gpu_temp_c", "°C", "rack", "hottest GPU die temperature in the rack"),
    _Q("rack_time_to_throttle_s", "s", "rack",
       "time until the rack's hottest GPU throttles after the loss of one pump of its CDU (inf if never)"),
    _Q("coolant_supply_temp_c", "°C", "cdu", "secondary (rack-side) coolant supply temperature"),
    _Q("cdu_supply_temp_c", "°C", "cdu", "the twin's secondary coolant supply temperature (stored as "
       "`coolant_supply_temp_c`)"),
    _Q("cdu_return_temp_c", "°C", "cdu", "the twin's secondary coolant return temperature (stored as "
       "`coolant_return_temp_c`)"),
    _Q("cdu_flow_lpm", "L/min", "cdu", "the twin's secondary coolant flow (stored as `coolant_flow_lpm`)"),
    _Q("coolant_return_temp_c", "°C", "cdu", "secondary coolant return temperature"),
    _Q("coolant_flow_lpm", "L/min", "cdu", "secondary coolant flow"),
    _Q("coolant_delta_t_k", "K", "cdu", "secondary return minus supply"),
    _Q("coolant_pressure_kpa", "kPa", "cdu", "secondary differential pressure"),
    _Q("facility_supply_temp_c", "°C", "cdu", "primary (facility water) supply temperature"),
    _Q("facility_return_temp_c", "°C", "cdu", "primary (facility water) return temperature"),
    _Q("facility_flow_lpm", "L/min", "cdu", "primary (facility water) flow"),
    _Q("cdu_heat_kw", "kW", "cdu", "heat removed by the CDU"),
    _Q("cdu_capacity_kw", "kW", "cdu", "heat the CDU can remove at the present supply temperature"),
    _Q("pump_speed_frac", "1", "pump", "pump speed as a fraction of maximum"),
    _Q("pumps_running_count", "count", "cdu", "pumps running in the CDU"),
    _Q("leak_detected_flag", "flag", "cdu", "a leak detector reports a leak"),
    # Facility water loops
    _Q("loop_supply_temp_c", "°C", "loop", "facility-water loop supply temperature (leaving the plant)"),
    _Q("loop_return_temp_c", "°C", "loop", "facility-water loop return temperature"),
    _Q("loop_heat_kw", "kW", "loop", "heat the loop returns to the plant"),
    # Power tree
    _Q("feed_power_kw", "kW", "power_element", "power through a feed element (busway, PDU, UPS, transformer)"),
    _Q("feed_current_a", "A", "power_element", "current through a feed element"),
    _Q("feed_voltage_v", "V", "power_element", "voltage at a feed element"),
    _Q("load_frac", "1", "power_element", "load as a fraction of the element's usable rating"),
    _Q("power_load_kw", "kW", "power_element", "the twin's power delivered downstream by a power-tree element "
       "(stored as `feed_power_kw`)"),
    _Q("power_load_frac", "1", "power_element", "the twin's load over usable rating (rating × max_util_frac; stored "
       "as `load_frac`)"),
    _Q("power_n1_load_frac", "1", "power_element", "worst load fraction after any single upstream failure (N-1)"),
    _Q("source_power_mw", "MW", "source", "power delivered by a source"),
    _Q("battery_soc_frac", "1", "source", "battery state of charge"),
    # Fabric
    _Q("link_up_flag", "flag", "link", "link is up"),
    _Q("link_util_frac", "1", "link", "link utilisation"),
    _Q("link_flaps_total", "count", "link", "link state changes"),
    # Site and jobs
    _Q("it_power_mw", "MW", "site", "IT load"),
    _Q("facility_power_mw", "MW", "site", "IT plus cooling and losses"),
    _Q("cooling_power_mw", "MW", "site", "power drawn by CDU pumps and the cooling plant"),
    _Q("generation_capacity_mw", "MW", "site", "capacity of the live sources (batteries only while charged)"),
    _Q("swing_amplitude_mw", "MW", "site", "site power difference between the compute and communication phases of the running jobs"),
    _Q("swing_ramp_mw_per_s", "MW/s", "site", "site power ramp at a step edge (swing amplitude over the edge time)"),
    _Q("pue_ratio", "1", "site", "facility power over IT power (racks and network)"),
    _Q("outdoor_wet_bulb_c", "°C", "site", "outdoor wet-bulb temperature"),
    _Q("outdoor_dry_bulb_c", "°C", "site", "outdoor dry-bulb temperature"),
    _Q("tokens_per_s", "1/s", "job", "training tokens per second"),
    _Q("step_time_s", "s", "job", "training step time"),
    _Q("mfu_frac", "1", "job", "model FLOP utilisation"),
    _Q("gpu_model_tflops", "TFLOP/s", "job", "model FLOPs per second per GPU (no recomputation)"),
    _Q("tokens_per_j", "1/J", "job", "training tokens per joule of GPU and node power"),
    _Q("ettr_frac", "1", "job", "effective training time ratio"),
    _Q("goodput_tokens_per_s", "1/s", "job", "tokens per second after failures and checkpoints"),
    _Q("job_mttf_h", "h", "job", "mean time between job interruptions"),
    _Q("checkpoint_interval_s", "s", "job", "time between checkpoints"),
    _Q("breakdown_s", "s", "job", "step-time components (compute, exposed communication, bubble, …) by name"),
    _Q("drain_gain_frac", "1", "job", "throughput recovered by draining the racks that set the pace"),
    _Q("gpu_hw_tflops", "TFLOP/s", "job", "executed FLOPs per second per GPU (recomputation included)"),
    _Q("avg_gpu_power_w", "W", "job", "GPU power averaged over a training step"),
    _Q("bubble_frac", "1", "job", "pipeline-bubble share of a step"),
    _Q("fabric_factor_dp_frac", "1", "job", "data-parallel bandwidth the fabric delivers, as a fraction of the NICs'"),
    _Q("checkpoint_write_s", "s", "job", "time a checkpoint write blocks training"),
    _Q("young_interval_s", "s", "job", "Young's first-order optimum checkpoint interval"),
    _Q("restart_s", "s", "job", "time from an interruption to training again"),
    _Q("interruptions_expected_count", "count", "job", "interruptions expected over the job's duration"),
    _Q("n_gpus", "count", "site, job", "GPUs of a site, or GPUs a job runs on"),
    _Q("n_nodes", "count", "site, job", "nodes of a site, or nodes a job runs on"),
    _Q("n_params", "count", "job", "model parameters"),
    _Q("n_micro_batches", "count", "job", "micro-batches per pipeline per step"),
    _Q("n_active_params", "count", "job", "parameters active per token (all of them for a dense model; MoE: the routed experts)"),
    _Q("n_virtual_stages", "count", "job", "model chunks per pipeline stage (interleaved schedule)"),
    _Q("n_stage_layers", "count", "job", "transformer layers on each pipeline stage (a list, first to last stage)"),
    _Q("stage_time_s", "s", "job", "busy time of each pipeline stage per micro-batch pass (a list)"),
    _Q("stage_imbalance_frac", "1", "job", "how much the slowest pipeline stage exceeds the mean stage"),
    _Q("dp_overlap_frac", "1", "job", "share of the data-parallel gradient traffic hidden behind compute"),
    _Q("clock_frac", "1", "job", "SM clock the power limit allows, as a fraction of the maximum clock"),
    _Q("ops_s", "s", "job", "compute time per step by operation class (a map: GEMMs, attention, memory-bound ops…)"),
    _Q("checkpoint_restore_s", "s", "job", "time to read the last checkpoint back after an interruption"),
    _Q("checkpoint_age_s", "s", "job", "training progress since the last completed checkpoint (lost if a rank fails now)"),
    _Q("lost_work_s", "s", "job", "wall time without progress because of failures (rolled-back progress and restarts)"),
    _Q("lost_tokens_count", "count", "job", "tokens the failures cost so far (lost work times the job's throughput)"),
    _Q("interruptions_total", "count", "job", "failures that stopped the job since the twin started"),
    _Q("job_power_frac", "1", "job", "GPU power of a job over its training power (idle share while stopped)"),
    # Site inventory (``clustertwin sites show``)
    _Q("n_halls", "count", "site", "halls"),
    _Q("n_rows", "count", "site", "rack rows"),
    _Q("n_racks", "count", "site", "racks"),
    _Q("n_cdus", "count", "site", "CDUs"),
    _Q("n_cooling_loops", "count", "site", "facility-water loops"),
    _Q("n_plants", "count", "site", "cooling plants"),
    _Q("n_switches", "count", "site", "fabric switches"),
    _Q("n_leaf_switches", "count", "site", "leaf switches"),
    _Q("n_spine_switches", "count", "site", "spine switches"),
    _Q("n_core_switches", "count", "site", "core switches"),
    _Q("n_links", "count", "site", "fabric links, switch-to-switch plus one NIC link per GPU"),
    _Q("n_power_elements", "count", "site", "power-tree elements (transformers, UPSs, busways, PDUs)"),
    _Q("n_power_sources", "count", "site", "power sources (grid, generators, batteries)"),
    _Q("n_power_sources_by_kind", "count", "site", "power sources by kind (grid, generator, battery)"),
    _Q("generation_capacity_by_kind_mw", "MW", "site", "rated source capacity by kind (`<kind>_mw`)"),
    _Q("battery_energy_mwh", "MWh", "site", "energy the batteries store when full"),
    _Q("rated_it_power_mw", "MW", "site", "sum of the racks' rated power"),
    _Q("full_load_it_power_mw", "MW", "site", "IT power with every GPU at its TDP"),
    _Q("gpu_tdp_total_mw", "MW", "site", "sum of the GPUs' TDP"),
    # Site projection (``clustertwin project``)
    _Q("distribution_loss_mw", "MW", "site", "losses of the power tree between the sources and the racks"),
    _Q("network_power_mw", "MW", "site", "power of the fabric switches"),
    _Q("generation_n1_capacity_mw", "MW", "site", "generation capacity after the loss of the largest live source"),
    _Q("shortfall_mw", "MW", "site", "facility power above the generation capacity"),
    _Q("n_gpus_runnable_at_full_power", "count", "site", "GPUs that can run at TDP within the generation (the others off)"),
    _Q("power_cap_for_all_gpus_w", "W", "site", "per-GPU power limit that lets every running GPU fit the generation, clipped to [minimum limit, TDP]"),
    _Q("power_cap_fits_flag", "flag", "site", "the clipped power cap actually fits the generation"),
    _Q("n_gpus_throttled", "count", "site", "GPUs throttled"),
    _Q("n_gpus_down", "count", "site", "GPUs down (a fault)"),
    _Q("n_gpus_off", "count", "site", "GPUs powered off on purpose"),
    _Q("swing_period_s", "s", "site", "step time of the fastest job (the swing's period)"),
    _Q("swing_followable_mw", "MW", "site", "swing that the generation ramp and the batteries can track"),
    _Q("generation_ramp_mw_per_s", "MW/s", "site", "summed ramp rate of the live generators"),
    _Q("battery_headroom_mw", "MW", "site", "spare power of the charged batteries"),
    _Q("swing_shortfall_mw", "MW", "site", "swing the supply cannot follow"),
    _Q("swing_within_limits_flag", "flag", "site", "the supply can follow the swing"),
    _Q("n_links_down", "count", "site", "fabric links down"),
    _Q("uplink_capacity_tbps", "Tb/s", "site", "surviving uplink capacity by tier"),
    _Q("nic_injection_tbps", "Tb/s", "site", "GPU NIC bandwidth into the fabric"),
    _Q("mean_uplink_util_frac", "1", "site", "mean utilisation of the live uplinks"),
    _Q("min_s", "s", "rack", "shortest time to throttle or shut down among the racks, per failure scenario"),
    _Q("median_s", "s", "rack", "median time to throttle or shut down among the racks, per failure scenario"),
    _Q("n_racks_never", "count", "rack", "racks that never throttle or shut down in a failure scenario"),
    _Q("dp_busbw_gbps", "Gb/s", "job", "bus bandwidth of the job's data-parallel collectives"),
    # What-if comparison and blast radius (``clustertwin project --scenario``, ``clustertwin blast-radius``)
    _Q("hottest_gpu_temp_c", "°C", "site", "temperature of the hottest GPU"),
    _Q("n_dark_racks", "count", "site", "racks without power"),
    _Q("n_overloaded_elements", "count", "site", "power-tree elements above their usable rating"),
    _Q("n_n1_violations", "count", "site", "power-tree elements overloaded after their worst single failure"),
    _Q("n_design_errors", "count", "site", "design findings that are errors (none in a built site)"),
    _Q("n_design_warnings", "count", "site", "design findings that are warnings"),
    _Q("cdu_load_frac", "1", "cdu", "heat removed over the CDU's present capacity"),
    _Q("cdu_max_load_frac", "1", "site", "largest CDU load fraction"),
    _Q("loop_capacity_kw", "kW", "loop", "design heat capacity of a facility-water loop"),
    _Q("loop_load_frac", "1", "loop", "loop heat over its design capacity"),
    _Q("loop_max_load_frac", "1", "site", "largest loop load fraction"),
    _Q("leaf_ports_used_count", "count", "site", "leaf-switch ports taken by GPU NICs"),
    _Q("leaf_ports_available_count", "count", "site", "leaf-switch downlink ports"),
    _Q("leaf_ports_over_count", "count", "site", "NICs beyond their leaf switch's downlink ports"),
    _Q("load_kw", "kW", "element", "design load of an element (racks at full power) in a design finding"),
    _Q("limit_kw", "kW", "element", "rating or capacity the design load is checked against"),
    _Q("ports_needed_count", "count", "switch", "NIC ports a leaf switch must take"),
    _Q("ports_available_count", "count", "switch", "downlink ports a leaf switch has"),
    _Q("load_delta_frac", "1", "element", "scenario minus baseline load fraction"),
    _Q("rack_max_gpu_temp_delta_k", "K", "rack", "scenario minus baseline temperature of the rack's hottest GPU"),
    _Q("rack_power_delta_kw", "kW", "rack", "scenario minus baseline rack power"),
    _Q("overloaded_flag", "flag", "element", "the element is above its usable rating"),
    _Q("dark_flag", "flag", "rack", "the rack has no power"),
    _Q("n_racks_fed", "count", "element", "racks an element feeds, cools or connects"),
    _Q("n_gpus_fed", "count", "element", "GPUs in the racks an element feeds, cools or connects"),
    _Q("n_racks_dark", "count", "element", "racks that lose all power when the element trips"),
    _Q("it_power_lost_mw", "MW", "element", "IT power that stops when the element trips"),
    _Q("after_tokens_per_s", "1/s", "job", "training tokens per second after the element trips"),
    # What-if edits and stored scenarios (``clustertwin scenario show --json``; docs/scenarios.md)
    _Q("n_edits", "count", "scenario", "edits kept in a stored scenario (applied and undone)"),
    _Q("x_m", "m", "rack", "floor position of a rack centre, x (edit field)"),
    _Q("y_m", "m", "rack", "floor position of a rack centre, y (edit field)"),
    _Q("dx_m", "m", "rack", "shift of racks along x (edit field)"),
    _Q("dy_m", "m", "rack", "shift of racks along y (edit field)"),
    _Q("orientation_deg", "°", "rack", "rack orientation, 0 = front faces +y (edit field)"),
    _Q("gpu_power_limit_w", "W", "gpu", "GPU power cap an edit sets"),
    _Q("supply_setpoint_c", "°C", "plant", "facility-water supply setpoint of a plant (edit field)"),
    _Q("supply_temp_c", "°C", "loop", "facility supply override of a loop, or a CDU's secondary supply setpoint "
       "(edit field)"),
    _Q("pumps_count", "count", "cdu", "pumps a failure takes out of a CDU (edit field)"),
    _Q("chillers_count", "count", "plant", "chillers a failure takes out of a plant (edit field)"),
    _Q("lost_tokens_per_s", "1/s", "job", "training tokens per second lost when the element trips"),
    # Ingest
    _Q("source_age_s", "s", "ingest_source", "seconds since a telemetry source's last good reading (inf if never)"),
)

# Fields of the snapshot, the job status and the reports that are not quantities.
NOT_QUANTITIES: dict[str, str] = {
    "ts": "timestamp (timezone-aware UTC)",
    "jobs": "records: one JobStatus per running job; the jobs an element trip hits (blast radius)",
    "name": "name of a job",
    "gpu_ids": "ids: dense GPU ids a job runs on",
    "bottleneck_racks": "ids: dense rack ids (names in reports) whose GPUs set a job's pace",
    "job": "name of a job file (throughput report); section of the running job (project report)",
    "gpu": "name of a GPU type (throughput report)",
    "site": "name of a site (reports); true in a set_cap edit for the whole site",
    "fabric_limiting_tier_dp": "name of the fabric tier that limits data-parallel traffic (throughput report)",
    "fabric_limiting_tier": "name of the fabric tier that limits data-parallel traffic (project report)",
    "description": "text: what a site file describes",
    "gpu_types": "names of the GPU types of a site",
    "scenario": "name of a what-if scenario; section: the scenario's report (project --scenario)",
    "baseline": "section: the baseline's report (project --scenario); a figure's baseline value (diff)",
    "diff": "section: what the scenario changed (project --scenario)",
    "headline": "section keyed by figure (its path in the report): baseline, scenario, delta, change",
    "delta": "scenario minus baseline, in the unit of the figure",
    "change": "name: worse, better, changed, same, added or removed",
    "layout": "names of the layout changes of a rack (added, removed, moved, type, feeds, cdu)",
    "racks": "section: racks that changed (diff); names or globs of racks (edit field)",
    "power_elements": "section: power-tree elements whose load changed (diff)",
    "cdus": "section: CDUs whose load changed (diff); names or globs of CDUs (edit field)",
    "loops": "section: facility loops, their heat and capacity; loops whose load changed (diff); names or globs "
             "of loops (edit field)",
    "busiest_cdus": "section: the CDUs nearest their capacity",
    "cdu": "name of a CDU",
    "loop": "name of a facility-water loop",
    "cooling": "section: CDU and loop capacity use",
    "design_findings": "section: ratings exceeded by design (twin.site.design); new and resolved ones (diff)",
    "new": "section: design findings the scenario adds",
    "resolved": "section: design findings the scenario removes",
    "check": "name of a design check",
    "severity": "name: error or warning",
    "message": "text: what a design finding says",
    "racks_fed": "names of the racks an element feeds, cools or connects",
    "id": "id: a stored scenario's database id",
    "baseline_version": "id: version of the stored site file a scenario edits (null: the site file as loaded)",
    "design_limits": "name: strict or warn, what an exceeded rating does (docs/scenarios.md)",
    "position": "count of a stored scenario's edits that are applied (undo/redo position)",
    "can_undo": "boolean: a stored scenario has an applied edit to undo",
    "can_redo": "boolean: a stored scenario has an undone edit to redo",
    "created_at": "timestamp (timezone-aware UTC)",
    "updated_at": "timestamp (timezone-aware UTC)",
    "edits": "records: the edits of a scenario, each an op and its fields",
    "op": "name of an edit operation",
    "note": "text: a person's note on an edit",
    "elements": "names or globs of elements (edit field)",
    "plants": "names or globs of cooling plants (edit field)",
    "halls": "names or globs of halls (edit field)",
    "rows": "names or globs of rows, <hall>-<row> (edit field)",
    "hall": "name of a hall",
    "row": "name of a row within its hall",
    "type": "name of a rack type of the catalogue (edit field)",
    "feed_a": "name of the busway of a rack's A feed",
    "feed_b": "name of the busway of a rack's B feed (empty: single-fed)",
    "idle_nodes_off": "boolean: nodes without a GPU of the job are powered off (scenario)",
    "racks_dark": "names of the racks that lose all power when the element trips",
    "racks_throttled": "names of the racks whose GPUs throttle when the element trips",
    "dark_racks": "names of racks without power",
    "worst_racks": "names of the racks that fail first in a scenario",
    "gpu_id": "id: dense GPU id",
    "gpu_index": "id: GPU index within its node (0–7)",
    "node": "name of a node",
    "rack": "name of a rack",
    "element": "name of a power-tree element (or of any element, design findings and blast radius)",
    "kind": "name of a kind of power-tree element (or of any element, blast radius)",
    "after_loss_of": "name of the power-tree element whose loss gives the worst load",
    "gpus": "section: GPU counts by state (project report)",
    "hottest_gpus": "section: the hottest GPUs (project report)",
    "hottest_racks": "section: the hottest racks (project report)",
    "overloaded_elements": "section: power-tree elements above their usable rating (project report)",
    "n1_violations": "section: power-tree elements overloaded after a single failure (project report)",
    "swing": "section: training power swing against the supply (project report)",
    "fabric": "section: fabric state (project report)",
    "time_to_throttle_s": "section keyed by failure scenario: statistics of the racks' times (project report)",
    "schedule": "name of the pipeline schedule (1f1b, interleaved, zero_bubble)",
    "restart_phase": "name of a job's phase in the restart cycle (running, checkpointing, detecting, draining, restoring, warming_up)",
    "interruptions_per_day_by_cause": "section keyed by failure cause: interruptions per day (throughput report)",
}

# Unit suffixes: the name ends in ``_<suffix>`` and the value is in that unit.
UNIT_SUFFIXES: dict[str, str] = {
    "w": "watts", "kw": "kilowatts", "mw": "megawatts", "mwh": "megawatt-hours",
    "c": "degrees Celsius", "k": "kelvin (temperature differences)",
    "lpm": "litres per minute", "kpa": "kilopascals", "pa": "pascals",
    "v": "volts", "a": "amperes", "j": "joules", "mhz": "megahertz", "rpm": "revolutions per minute",
    "s": "seconds", "h": "hours", "m": "metres", "deg": "degrees (angles)", "mib": "mebibytes", "gbps": "gigabits per second",
    "tbps": "terabits per second", "tflops": "10^12 floating-point operations per second",
    "per_s": "per second (a rate: ``tokens_per_s``, ``mw_per_s``)", "per_j": "per joule",
    "frac": "a 0–1 fraction (never percent)", "ratio": "a dimensionless ratio that may exceed 1",
    "total": "a monotone counter (resets only when the device resets)",
}

# Forms of names whose values are codes, states, flags or counts rather than measurements.
CATEGORICAL_FORMS: dict[str, str] = {
    "*_code": "a code from a published table (e.g. an XID)",
    "*_state": "a state code defined where the name is produced",
    "*_mask": "a bitmask whose bits are defined by the source",
    "*_flag": "a boolean, 1 = true",
    "*_count": "a number of things present now (a gauge, unlike ``_total``)",
    "n_*": "a number of things",
}


def has_unit_form(name: str) -> bool:
    """True if ``name`` ends in a unit suffix or has one of the categorical forms."""
    suffixes = list(UNIT_SUFFIXES) + [form[2:] for form in CATEGORICAL_FORMS if form.startswith("*_")]
    return name.startswith("n_") or any(name.endswith("_" + suffix) for suffix in suffixes)


BY_NAME: dict[str, Quantity] = {q.name: q for q in QUANTITIES}


def quantity(name: str) -> Quantity:
    """Return the canonical quantity ``name`` or raise ``KeyError`` naming it."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown quantity {name!r}; canonical names live in twin/quantities.py") from None


def markdown_table() -> str:
    """The nomenclature table as Markdown (the README embeds exactly this text)."""
    lines = ["| name | unit | entity | meaning |", "|---|---|---|---|"]
    lines += [f"| `{q.name}` | {q.unit} | {q.entity} | {q.description} |" for q in QUANTITIES]
    return "\n".join(lines)
