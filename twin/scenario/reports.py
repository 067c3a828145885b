"""The typed reports of the scenario layer: a projection, a comparison of two, and a blast radius.

Fields carry units in their names (``twin/quantities.py``); :meth:`twin.reports.Report.as_dict`
turns a report into the JSON document ``clustertwin project --json``, ``clustertwin
blast-radius --json`` and the API print (its keys are the field names, in order).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from twin.physics.island import GenerationChecks
from twin.physics.swing import SwingReport
from twin.reports import Report, optional
from twin.site.design import DesignFinding


# ------------------------------------------------------------------ projection
@dataclass
class ElementLoad(Report):
    """A power element over its usable rating."""

    element: str
    kind: str
    load_frac: float


@dataclass
class N1Violation(Report):
    """A power element over its usable rating after the worst single failure."""

    element: str
    kind: str
    load_frac: float
    power_n1_load_frac: float
    after_loss_of: str | None


@dataclass
class GpuCounts(Report):
    """GPUs installed, and how many are throttled, down or switched off."""

    n_gpus: int
    n_gpus_throttled: int
    n_gpus_down: int
    n_gpus_off: int


@dataclass
class HotGpu(Report):
    """One of the hottest GPUs."""

    gpu_id: int
    node: str
    gpu_index: int
    rack: str
    gpu_temp_c: float
    throttle_frac: float


@dataclass
class HotRack(Report):
    """One of the racks with the hottest GPU."""

    rack: str
    rack_max_gpu_temp_c: float
    rack_power_kw: float


@dataclass
class ThrottleTimes(Report):
    """Times to throttle (or shut down) after one cooling failure, over the racks (None: no rack ever)."""

    min_s: float | None
    median_s: float | None
    n_racks_never: int
    worst_racks: list[str]


@dataclass
class SwingFigures(Report):
    """The training swing and its dips against what the supply can follow (:class:`twin.physics.swing.SwingReport`)."""

    swing_amplitude_mw: float
    swing_ramp_mw_per_s: float
    swing_period_s: float
    swing_followable_mw: float
    generation_ramp_mw_per_s: float
    battery_headroom_mw: float
    swing_shortfall_mw: float
    swing_within_limits_flag: bool
    swing_jobs_in_phase_flag: bool
    swing_dominant_period_s: float
    swing_dominant_line_mw: float
    checkpoint_period_s: float
    checkpoint_dip_mw: float
    checkpoint_dip_s: float
    eval_dip_mw: float
    eval_dip_s: float
    restart_dip_mw: float
    restart_dip_s: float
    restart_surge_mw_per_s: float

    @classmethod
    def of(cls, sw: SwingReport) -> SwingFigures:
        return cls(
            swing_amplitude_mw=sw.amplitude_mw,
            swing_ramp_mw_per_s=sw.ramp_mw_per_s,
            swing_period_s=sw.period_s,
            swing_followable_mw=sw.followable_mw,
            generation_ramp_mw_per_s=sw.generation_ramp_mw_per_s,
            battery_headroom_mw=sw.battery_headroom_mw,
            swing_shortfall_mw=sw.shortfall_mw,
            swing_within_limits_flag=sw.within_limits,
            swing_jobs_in_phase_flag=sw.jobs_in_phase,
            swing_dominant_period_s=sw.dominant_period_s,
            swing_dominant_line_mw=sw.dominant_line_mw,
            checkpoint_period_s=sw.checkpoint_period_s,
            checkpoint_dip_mw=sw.checkpoint_dip_mw,
            checkpoint_dip_s=sw.checkpoint_dip_s,
            eval_dip_mw=sw.eval_dip_mw,
            eval_dip_s=sw.eval_dip_s,
            restart_dip_mw=sw.restart_dip_mw,
            restart_dip_s=sw.restart_dip_s,
            restart_surge_mw_per_s=sw.restart_surge_mw_per_s,
        )


@dataclass
class UplinkCapacity(Report):
    """Surviving uplink capacity per tier [Tb/s]."""

    leaf_to_spine: float
    spine_to_core: float


@dataclass
class FabricFigures(Report):
    """Links down, tier capacity, NIC injection and mean uplink use; a comparison adds the leaf ports."""

    n_links_down: int
    uplink_capacity_tbps: UplinkCapacity
    nic_injection_tbps: float
    mean_uplink_util_frac: float
    leaf_ports_used_count: int | None = optional()
    leaf_ports_available_count: int | None = optional()
    leaf_ports_over_count: int | None = optional()


@dataclass
class JobFigures(Report):
    """The placed job's throughput and goodput on the settled site."""

    name: str
    n_gpus: int
    step_time_s: float
    tokens_per_s: float
    gpu_model_tflops: float
    mfu_frac: float
    goodput_tokens_per_s: float
    ettr_frac: float
    checkpoint_interval_s: float
    breakdown_s: dict[str, float]
    dp_busbw_gbps: float
    fabric_limiting_tier: str
    bottleneck_racks: list[str]
    drain_gain_frac: float


@dataclass
class SourceFigures(Report):
    """One source: output, derated capacity, charge, and its share of the swing against its limits."""

    source: str
    kind: str
    live_flag: bool
    source_power_mw: float
    source_capacity_mw: float
    battery_soc_frac: float | None
    iso_8528_class: str | None
    swing_share_mw: float
    swing_ramp_mw_per_s: float
    swing_limit_mw: float
    ramp_limit_mw_per_s: float
    over_limit_flag: bool


@dataclass
class PolicyFigures(Report):
    """The shortfall policy's action in force at the end of the run, and what it leaves the job."""

    policy: str
    policy_response_s: float
    policy_active_flag: bool
    policy_gpu_cap_w: float | None
    power_brake_flag: bool
    n_racks_shed: int
    n_gpus_shed: int
    policy_pending_s: float
    battery_power_mw: float
    ups_power_mw: float
    unserved_mw: float
    ups_ride_through_s: float
    battery_exhaust_s: float
    swing_unfollowed_mw: float
    swing_sources_within_limits_flag: bool
    job_step_time_s: float | None
    job_tokens_per_s: float | None


@dataclass
class GridContractFigures(Report):
    """The grid import under the swing and the dips against the contract (:class:`twin.physics.island.GridFigures`)."""

    import_mw: float
    import_limit_mw: float
    export_limit_mw: float
    peak_import_mw: float
    min_import_mw: float
    grid_ramp_mw_per_s: float
    ramp_limit_mw_per_s: float | None
    short_circuit_mva: float | None
    voltage_change_frac: float | None
    voltage_change_limit_frac: float | None
    within_contract_flag: bool


@dataclass
class GenerationFigures(Report):
    """The generating units as a generator engineer tests them (:class:`twin.physics.island.GenerationChecks`)."""

    islanded_flag: bool
    spinning_reserve_mw: float
    largest_source: str | None
    largest_source_mw: float
    n1_capacity_mw: float
    n1_deficit_mw: float
    n1_step_deficit_mw: float
    reserve_ok_flag: bool
    units_step_limited_count: int
    island_online_mw: float
    island_mode_hz: float | None
    island_damping_ratio: float | None
    swing_on_units_mw: float
    swing_freq_pp_hz: float
    freq_band_hz: float
    frequency_ok_flag: bool
    rejection_mw: float
    rejection_frac: float
    rejection_freq_rise_frac: float
    freq_rise_limit_frac: float
    overspeed_trip_frac: float | None
    rejection_ok_flag: bool
    surge_mw: float
    surge_frac: float
    unit_step_frac: float | None
    surge_freq_dip_frac: float
    freq_dip_limit_frac: float
    surge_recovery_s: float
    freq_recovery_limit_s: float
    surge_ok_flag: bool
    rocof_hz_per_s: float
    grid: GridContractFigures | None

    @classmethod
    def of(cls, g: GenerationChecks, source_name: list[str]) -> GenerationFigures:
        fin: Callable[[float], float | None] = lambda v: float(v) if math.isfinite(v) else None  # noqa: E731
        r, grid, contract = g.reserve, g.grid, g.grid_contract
        return cls(
            islanded_flag=g.islanded_flag,
            spinning_reserve_mw=r.spinning_reserve_mw,
            largest_source=source_name[r.largest_source] if r.largest_source >= 0 else None,
            largest_source_mw=r.largest_source_mw,
            n1_capacity_mw=r.n1_capacity_mw,
            n1_deficit_mw=r.n1_deficit_mw,
            n1_step_deficit_mw=r.n1_step_deficit_mw,
            reserve_ok_flag=g.reserve_ok,
            units_step_limited_count=g.units_step_limited_count,
            island_online_mw=g.island_online_mw,
            island_mode_hz=fin(g.island_mode_hz),
            island_damping_ratio=fin(g.island_damping_ratio),
            swing_on_units_mw=g.swing_on_units_mw,
            swing_freq_pp_hz=g.swing_freq_pp_hz,
            freq_band_hz=g.freq_band_hz,
            frequency_ok_flag=g.frequency_ok,
            rejection_mw=g.rejection_mw,
            rejection_frac=g.rejection_frac,
            rejection_freq_rise_frac=g.rejection_freq_rise_frac,
            freq_rise_limit_frac=g.freq_rise_limit_frac,
            overspeed_trip_frac=fin(g.overspeed_trip_frac),
            rejection_ok_flag=g.rejection_ok,
            surge_mw=g.surge_mw,
            surge_frac=g.surge_frac,
            unit_step_frac=fin(g.unit_step_frac),
            surge_freq_dip_frac=g.surge_freq_dip_frac,
            freq_dip_limit_frac=g.freq_dip_limit_frac,
            surge_recovery_s=g.surge_recovery_s,
            freq_recovery_limit_s=g.freq_recovery_limit_s,
            surge_ok_flag=g.surge_ok,
            rocof_hz_per_s=g.rocof_hz_per_s,
            grid=None
            if grid is None or contract is None  # both or neither
            else GridContractFigures(
                import_mw=grid.import_mw,
                import_limit_mw=contract.import_limit_mw,
                export_limit_mw=contract.export_limit_mw,
                peak_import_mw=grid.peak_import_mw,
                min_import_mw=grid.min_import_mw,
                grid_ramp_mw_per_s=grid.ramp_mw_per_s,
                ramp_limit_mw_per_s=fin(contract.ramp_limit_mw_per_s),
                short_circuit_mva=fin(contract.short_circuit_mva),
                voltage_change_frac=fin(grid.voltage_change_frac),
                voltage_change_limit_frac=fin(contract.voltage_change_limit_frac),
                within_contract_flag=grid.within_contract,
            ),
        )


@dataclass
class ProjectionReport(Report):
    """What an operator acts on after the twin settled under a scenario (``clustertwin project``)."""

    site: str
    scenario: str
    ts: str  # ISO 8601, UTC
    outdoor_dry_bulb_c: float
    outdoor_wet_bulb_c: float
    it_power_mw: float
    distribution_loss_mw: float
    cooling_power_mw: float
    network_power_mw: float
    facility_power_mw: float
    heat_rejected_mw: float
    heat_stored_mw: float
    pue_ratio: float
    generation_capacity_mw: float
    generation_n1_capacity_mw: float
    shortfall_mw: float
    n_gpus_runnable_at_full_power: int
    power_cap_for_all_gpus_w: float
    power_cap_fits_flag: bool
    overloaded_elements: list[ElementLoad]
    n1_violations: list[N1Violation]
    dark_racks: list[str]
    gpus: GpuCounts
    hottest_gpus: list[HotGpu]
    hottest_racks: list[HotRack]
    time_to_throttle_s: dict[str, ThrottleTimes]  # by failure: pump_loss_throttle_s, cdu_loss_shutdown_s, ...
    swing: SwingFigures
    fabric: FabricFigures
    job: JobFigures | None
    sources: list[SourceFigures]
    shortfall_policy: PolicyFigures
    generation: GenerationFigures | None = None


# ------------------------------------------------------------------ comparison
@dataclass
class LoopUse(Report):
    """A facility loop's heat against its capacity."""

    loop: str
    loop_heat_kw: float
    loop_capacity_kw: float
    loop_load_frac: float


@dataclass
class CduUse(Report):
    """A CDU's heat against its capacity."""

    cdu: str
    cdu_heat_kw: float
    cdu_capacity_kw: float
    cdu_load_frac: float


@dataclass
class CoolingUse(Report):
    """How much of the cooling capacity the site uses: the busiest CDU and loop, every loop, the busiest CDUs."""

    cdu_max_load_frac: float
    loop_max_load_frac: float
    loops: list[LoopUse]
    busiest_cdus: list[CduUse]


@dataclass
class ScenarioSide(ProjectionReport):
    """One side of a comparison: the projection plus cooling use, design findings and headline counts."""

    cooling: CoolingUse | None = None
    design_findings: list[DesignFinding] = field(default_factory=list)
    n_design_errors: int = 0
    n_design_warnings: int = 0
    hottest_gpu_temp_c: float = 0.0
    n_dark_racks: int = 0
    n_overloaded_elements: int = 0
    n_n1_violations: int = 0


@dataclass
class Change(Report):
    """One figure on both sides; ``delta`` (scenario − baseline) when both are finite, and the verdict
    (``worse``, ``better``, ``changed`` or ``same``)."""

    baseline: float | None
    scenario: float | None
    delta: float | None = optional()
    change: str = "same"

    def as_dict(self) -> dict[str, Any]:  # "change" last, after the optional delta
        out: dict[str, Any] = {"baseline": self.baseline, "scenario": self.scenario}
        if self.delta is not None:
            out["delta"] = self.delta
        out["change"] = self.change
        return out


@dataclass
class RackChange(Report):
    """A rack that changed: by layout (added, removed, moved, type, feeds, CDU) or in its hottest GPU and power."""

    rack: str
    change: str  # worse, better, changed, added, removed
    layout: list[str]
    rack_max_gpu_temp_c: float | None = None
    rack_max_gpu_temp_delta_k: float | None = None
    rack_power_kw: float | None = None
    rack_power_delta_kw: float | None = None
    dark_flag: bool = False

    def as_dict(self) -> dict[str, Any]:
        out = {"rack": self.rack, "change": self.change, "layout": list(self.layout)}
        if self.change == "removed":
            return out
        if self.change == "added":
            return {**out, "rack_max_gpu_temp_c": self.rack_max_gpu_temp_c, "rack_power_kw": self.rack_power_kw}
        return {
            **out,
            "rack_max_gpu_temp_c": self.rack_max_gpu_temp_c,
            "rack_max_gpu_temp_delta_k": self.rack_max_gpu_temp_delta_k,
            "rack_power_kw": self.rack_power_kw,
            "rack_power_delta_kw": self.rack_power_delta_kw,
            "dark_flag": self.dark_flag,
        }


@dataclass
class ElementChange(Report):
    """A power element whose load changed."""

    element: str
    kind: str
    load_frac: float
    load_delta_frac: float
    change: str
    overloaded_flag: bool


@dataclass
class LoadChange(Report):
    """A CDU or facility loop whose load changed, or that was added or removed (``kind``: cdu, loop)."""

    kind: str
    name: str
    change: str
    load_frac: float | None = None
    load_delta_frac: float | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {self.kind: self.name, "change": self.change}
        if self.change != "removed":
            out.update({f"{self.kind}_load_frac": self.load_frac, "load_delta_frac": self.load_delta_frac})
        return out


@dataclass
class FindingChanges(Report):
    """Design findings the scenario brought and those it resolved."""

    new: list[DesignFinding]
    resolved: list[DesignFinding]


@dataclass
class Diff(Report):
    """What changed from the baseline to the scenario."""

    headline: dict[str, Change]  # by figure (compare.HEADLINE): "it_power_mw", "gpus.n_gpus_down", ...
    time_to_throttle_s: dict[str, Change]  # by failure, the worst rack's time
    racks: list[RackChange]
    power_elements: list[ElementChange]
    cdus: list[LoadChange]
    loops: list[LoadChange]
    design_findings: FindingChanges


@dataclass
class Comparison(Report):
    """A scenario against its baseline (``clustertwin project --scenario``)."""

    baseline: ScenarioSide
    scenario: ScenarioSide
    diff: Diff


# ------------------------------------------------------------------ blast radius
@dataclass
class JobLoss(Report):
    """A job an element's trip slows or stops."""

    name: str
    tokens_per_s: float
    after_tokens_per_s: float
    lost_tokens_per_s: float


@dataclass
class BlastRadius(Report):
    """What one element's trip takes down (``clustertwin blast-radius``)."""

    element: str
    kind: str
    site: str
    racks_fed: list[str]
    n_racks_fed: int
    racks_dark: list[str]
    n_racks_dark: int
    racks_throttled: list[str]
    n_gpus_fed: int
    n_gpus_down: int
    n_gpus_throttled: int
    n_gpus_off: int
    jobs: list[JobLoss]
    lost_tokens_per_s: float
    it_power_lost_mw: float
