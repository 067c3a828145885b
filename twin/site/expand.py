"""Expand the checked parts of a site file into the columns of :class:`twin.site.tables.SiteTables`.

The loader (:mod:`twin.site.load`) checks the file and calls these; each returns the
columns of one part as keyword arguments of ``SiteTables``: site information, racks,
nodes and GPUs (:class:`Compute`), cooling (plants, loops, CDUs), sources, the power
tree, the fabric.  Nothing here raises: every name and count was checked before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from twin.arrays import AnyArray, FloatArray, IntArray
from twin.site import cooling_defaults
from twin.site.catalogue import Catalogue, NodeSpec, RackSpec
from twin.site.fabricgen import Fabric
from twin.site.racks import Racks
from twin.site.schema import FabricSpec, LoopSpec, PlantSpec, PowerElementSpec, PowerSpec, SiteFile
from twin.site.tables import POWER_KINDS, CduSpec, GpuSpec

# the loader's per-unit source lists: names, kinds, capacity [MW], energy [MWh], ramp [MW/s], bus,
# and (load step [MW], ISO 8528 class, derate [1/K], rated ambient [°C], round-trip efficiency)
# then the island's frequency model and the grid contract (inertia, droop, governor, overspeed trip, export
# limit, short-circuit power, voltage change; None: not given)
_Opt = float | None
SourceExtra = tuple[float, str, float, float, float, _Opt, _Opt, _Opt, _Opt, _Opt, _Opt, _Opt]
SourceRows = tuple[list[str], list[int], list[float], list[float], list[float], list[int], list[SourceExtra]]


@dataclass
class Compute:
    """The nodes and GPUs of the racks, in rack order (dense ids)."""

    rack_specs: list[RackSpec]  # catalogue rack spec per rack
    node_rack: IntArray  # int32 [n_nodes]
    node_slot: IntArray  # int32 [n_nodes]: position in the rack
    node_type_id: IntArray  # [n_nodes] index into node_specs
    node_specs: list[NodeSpec]  # catalogue node specs of the site, sorted by name
    gpus_per_node: IntArray  # int64 [n_nodes]
    gpu_node: IntArray  # int32 [n_gpus]
    gpu_index: IntArray  # int32 [n_gpus]: position in the node
    gpu_spec: IntArray  # int16 [n_gpus] index into gpu_specs
    gpu_specs: list[GpuSpec]  # catalogue GPU specs of the site, sorted by name
    catalogue: Catalogue

    @classmethod
    def of(cls, r: Racks, cat: Catalogue) -> Compute:
        rack_specs = [cat.racks[t] for t in r.type]
        nodes_per_rack = np.array([rs.nodes for rs in rack_specs])
        node_rack = np.repeat(np.arange(len(r.name)), nodes_per_rack).astype(np.int32)
        node_slot = (
            np.arange(node_rack.size) - np.repeat(np.cumsum(nodes_per_rack) - nodes_per_rack, nodes_per_rack)
        ).astype(np.int32)
        node_types = sorted({rs.node for rs in rack_specs})
        node_type_id = np.repeat(np.array([node_types.index(rs.node) for rs in rack_specs]), nodes_per_rack)
        ntab = [cat.nodes[n] for n in node_types]
        gpus_per_node = np.array([n.gpus for n in ntab], dtype=np.int64)[node_type_id]
        gpu_names = sorted({n.gpu for n in ntab})
        gpu_node = np.repeat(np.arange(node_rack.size), gpus_per_node).astype(np.int32)
        gpu_index = (
            np.arange(gpu_node.size) - np.repeat(np.cumsum(gpus_per_node) - gpus_per_node, gpus_per_node)
        ).astype(np.int32)
        gpu_spec = np.repeat(np.array([gpu_names.index(n.gpu) for n in ntab])[node_type_id], gpus_per_node).astype(
            np.int16
        )
        return cls(
            rack_specs,
            node_rack,
            node_slot,
            node_type_id,
            ntab,
            gpus_per_node,
            gpu_node,
            gpu_index,
            gpu_spec,
            [cat.gpus[n] for n in gpu_names],
            cat,
        )

    @property
    def gpu_rack(self) -> IntArray:
        return self.node_rack[self.gpu_node]

    def per_node(self, attr: str, dtype: npt.DTypeLike = np.float64) -> AnyArray:
        """A node-spec attribute per node."""
        return np.array([getattr(n, attr) for n in self.node_specs], dtype=dtype)[self.node_type_id]

    def node_names(self, r: Racks, pattern: str) -> list[str]:
        """Host names from the site's ``hostname_pattern`` (hall, row and rack numbers, slot)."""
        return [
            pattern.format(hall=r.hall[k] + 1, row=r.row_number[r.row[k]], rack=r.number[k], slot=int(s))
            for k, s in zip(self.node_rack.tolist(), self.node_slot.tolist())
        ]

    def rack_full_kw(self, n_racks: int) -> FloatArray:
        """Rack power with every GPU at TDP and full base load [kW]."""
        tdp = np.array([g.tdp_w for g in self.gpu_specs])[self.gpu_spec]
        node_full_w = np.bincount(self.gpu_node, weights=tdp, minlength=self.node_rack.size) + self.per_node(
            "base_power_w"
        )
        return np.bincount(self.node_rack, weights=node_full_w, minlength=n_racks) / 1000.0

    def gpu_rail(self, rails: int) -> IntArray:
        """Rail of each GPU: GPU k of node slot s is on rail (s · GPUs per node + k) mod rails, so 8-GPU
        nodes use rail k and two 4-GPU trays together span the 8 rails."""
        return (
            self.node_slot[self.gpu_node].astype(np.int64) * self.gpus_per_node[self.gpu_node] + self.gpu_index
        ) % rails

    def node_columns(self, node_name: list[str]) -> dict[str, Any]:
        """Node and GPU columns."""
        return dict(
            gpu_specs=self.gpu_specs,
            node_name=node_name,
            node_bmc=[f"bmc-{n}" for n in node_name],
            node_rack=self.node_rack,
            node_slot=self.node_slot,
            node_psus=self.per_node("psus", np.int32),
            node_psus_required=self.per_node("psus_required", np.int32),
            node_psu_rating_w=self.per_node("psu_rating_w"),
            node_base_power_w=self.per_node("base_power_w"),
            node_idle_base_power_w=self.per_node("idle_base_power_w"),
            gpu_node=self.gpu_node,
            gpu_rack=self.gpu_rack,
            gpu_index=self.gpu_index,
            gpu_spec=self.gpu_spec,
        )


@dataclass
class CduTypes:
    """The CDU models of the site (sorted by name) and each CDU's model id."""

    specs: list[CduSpec]
    spec_id: IntArray  # int16 [n_cdus]

    @classmethod
    def of(cls, cdu_name: list[str], cdu_spec_name: list[str], cat: Catalogue) -> CduTypes:
        types = sorted(set(cdu_spec_name))
        return cls([cat.cdus[n] for n in types], np.array([types.index(n) for n in cdu_spec_name], dtype=np.int16))


def site_info(spec: SiteFile, file: str) -> dict[str, Any]:
    """Name, description, location, weather, overhead, default job and storage."""
    info, storage = spec.site, spec.storage
    return dict(
        name=info.name,
        description=info.description,
        source_file=file,
        hall_name=[h.name for h in spec.halls],
        latitude_deg=info.latitude_deg,
        longitude_deg=info.longitude_deg,
        weather=info.weather,
        site_overhead_mw=info.site_overhead_mw,
        default_job=info.default_job,
        storage_write_gbps=storage.write_gbps,
        storage_read_gbps=storage.read_gbps,
        storage_node_gbps=storage.node_gbps,
        storage_share_frac=storage.share_frac,
    )


def rack_columns(spec: SiteFile, r: Racks, comp: Compute) -> dict[str, Any]:
    """Row and rack columns: position, array, type, CDU, feeds, rated power."""
    node_specs_per_rack = [comp.catalogue.nodes[rs.node] for rs in comp.rack_specs]
    return dict(
        row_name=r.row_name,
        row_hall=np.asarray(r.row_hall, dtype=np.int32),
        rack_name=r.name,
        rack_row=np.asarray(r.row, dtype=np.int32),
        rack_hall=np.asarray(r.hall, dtype=np.int32),
        rack_x_m=np.asarray(r.x_m, dtype=np.float64),
        rack_y_m=np.asarray(r.y_m, dtype=np.float64),
        rack_orientation_deg=np.asarray(r.orientation_deg, dtype=np.float64),
        rack_array=np.asarray(r.array, dtype=np.int32),
        rack_type=r.type,
        rack_cdu=np.asarray(r.cdu, dtype=np.int32),
        rack_feed_a=np.asarray(r.feed_a, dtype=np.int32),
        rack_feed_b=np.asarray(r.feed_b, dtype=np.int32),
        rack_rated_kw=np.array(
            [
                rs.nodes * ns.psus_required * ns.psu_rating_w / 1000.0
                for rs, ns in zip(comp.rack_specs, node_specs_per_rack)
            ]
        ),
    )


def cooling_columns(
    plants: list[PlantSpec], plant_index: dict[str, int], loops: list[LoopSpec], r: Racks, cdus: CduTypes
) -> dict[str, Any]:
    """Plant, facility-loop and CDU columns, with the loops' and plants' water defaults filled in."""
    return dict(
        cdu_specs=cdus.specs,
        plant_name=[p.name for p in plants],
        plant_capacity_kw=np.array([p.chillers * p.chiller_kw for p in plants]),
        plant_supply_setpoint_c=np.array([p.supply_setpoint_c for p in plants]),
        plant_design_wet_bulb_c=np.array([p.design_wet_bulb_c for p in plants]),
        plant_tower_approach_k=np.array([p.tower_approach_k for p in plants]),
        plant_chiller_count=np.array([p.chillers for p in plants], dtype=np.int32),
        plant_chiller_kw=np.array([p.chiller_kw for p in plants]),
        plant_cop=np.array([p.cop for p in plants]),
        loop_name=[lp.name for lp in loops],
        loop_plant=np.array([plant_index[lp.plant] for lp in loops], dtype=np.int32),
        loop_capacity_kw=np.array([lp.capacity_kw for lp in loops]),
        loop_flow_lpm=np.array([lp.flow_lpm for lp in loops]),
        **_cooling_dynamics(plants, plant_index, loops),
        cdu_name=r.cdu_name,
        cdu_loop=np.asarray(r.cdu_loop, dtype=np.int32),
        cdu_spec=cdus.spec_id,
    )


def _cooling_dynamics(plants: list[PlantSpec], plant_index: dict[str, int], loops: list[LoopSpec]) -> dict[str, Any]:
    """Pipe sizes and water volumes of the loops and plants, defaults filled in (``cooling_defaults``)."""
    flow = np.array([lp.flow_lpm for lp in loops])
    length = np.array([lp.pipe_length_m for lp in loops])
    given_id = np.array([np.nan if lp.pipe_id_mm is None else lp.pipe_id_mm for lp in loops])
    pipe_id = np.where(np.isfinite(given_id), given_id, cooling_defaults.pipe_id_mm(flow))
    given_vol = np.array([np.nan if lp.volume_l is None else lp.volume_l for lp in loops])
    volume = np.where(np.isfinite(given_vol), given_vol, cooling_defaults.loop_volume_l(length, pipe_id))
    plant_flow = np.bincount([plant_index[lp.plant] for lp in loops], weights=flow, minlength=len(plants))
    plant_vol = np.array([np.nan if p.volume_l is None else p.volume_l for p in plants])
    return dict(
        loop_pipe_length_m=length,
        loop_pipe_id_mm=pipe_id,
        loop_volume_l=volume,
        plant_volume_l=np.where(np.isfinite(plant_vol), plant_vol, cooling_defaults.plant_volume_l(plant_flow)),
        plant_chiller_restart_s=np.array([p.chiller_restart_s for p in plants]),
    )


def source_columns(src: SourceRows) -> dict[str, Any]:
    """Source columns from the loader's per-unit lists (names, kinds, capacity, energy, ramp, bus, extras)."""
    names, kinds, cap, energy, ramp, bus, extra = src
    return dict(
        source_name=names,
        source_kind=np.asarray(kinds, dtype=np.int8),
        source_capacity_mw=np.asarray(cap, dtype=np.float64),
        source_energy_mwh=np.asarray(energy, dtype=np.float64),
        source_ramp_mw_per_s=np.asarray(ramp, dtype=np.float64),
        source_bus=np.asarray(bus, dtype=np.int32),
        source_step_mw=np.array([x[0] for x in extra], dtype=np.float64),
        source_iso_class=[x[1] for x in extra],
        source_derate_frac_per_k=np.array([x[2] for x in extra], dtype=np.float64),
        source_rated_ambient_c=np.array([x[3] for x in extra], dtype=np.float64),
        source_efficiency_frac=np.array([x[4] for x in extra], dtype=np.float64),
        **_frequency_columns(extra),
    )


def _frequency_columns(extra: list[SourceExtra]) -> dict[str, Any]:
    """The island's frequency model and the grid contract per source (NaN: not given, the model's default)."""
    col: Callable[[int], np.ndarray] = lambda i: np.array(
        [np.nan if x[i] is None else x[i] for x in extra], dtype=np.float64
    )  # noqa: E731
    return dict(
        source_inertia_h_s=col(5),
        source_droop_frac=col(6),
        source_governor_s=col(7),
        source_overspeed_trip_frac=col(8),
        source_export_limit_mw=col(9),
        source_short_circuit_mva=col(10),
        source_voltage_change_max_frac=col(11),
    )


def power_columns(
    power: PowerSpec, elements: list[tuple[int, PowerElementSpec]], power_index: dict[str, int], depth: IntArray
) -> dict[str, Any]:
    """Power-tree columns (elements in depth order), UPS ride-through energy and the shortfall policy."""
    pel = [e for _, e in elements]
    return dict(
        power_ride_through_kwh=np.array(
            [e.nameplate_kw * e.ride_through_s / 3600.0 if k == POWER_KINDS.index("ups") else 0.0 for k, e in elements]
        ),
        shortfall_policy=power.shortfall_policy,
        policy_response_s=power.policy_response_s,
        idle_nodes_off=power.idle_nodes_off,
        nominal_frequency_hz=power.nominal_frequency_hz,
        power_name=[e.name for e in pel],
        power_kind=np.array([k for k, _ in elements], dtype=np.int8),
        power_parent=np.array([power_index[e.parent] if e.parent else -1 for e in pel], dtype=np.int32),
        power_side=np.array(["AB".index(e.side) for e in pel], dtype=np.int8),
        power_rating_kw=np.array([e.nameplate_kw for e in pel]),
        power_max_util_frac=np.array([e.max_util_frac for e in pel]),
        power_efficiency_frac=np.array([e.efficiency_frac for e in pel]),
        power_voltage_v=np.array([e.voltage_v for e in pel]),
        power_phases=np.array([e.phases for e in pel], dtype=np.int8),
        power_depth=depth.astype(np.int8),
    )


def fabric_columns(fab: FabricSpec, fabric: Fabric, switch_index: dict[str, int]) -> dict[str, Any]:
    """Switch, link, GPU-leaf and endpoint columns of the generated ``fabric`` (site section ``fab``)."""
    return dict(
        switch_name=fabric.switch_name,
        switch_tier=fabric.switch_tier,
        switch_pod=fabric.switch_pod,
        switch_plane=fabric.switch_plane,
        switch_ports=fabric.switch_ports,
        link_a=fabric.link_a,
        link_b=fabric.link_b,
        link_gbps=fabric.link_gbps,
        gpu_leaf=fabric.gpu_leaf,
        nic_gbps=fab.link_gbps,
        fabric_rails=fab.rails,
        fabric_pod_gpus=fabric.pod_gpus,
        fabric_leaf_oversubscription=fab.leaf_oversubscription,
        fabric_spine_oversubscription=fab.spine_oversubscription,
        endpoint_name=[e.name for e in fab.endpoints],
        endpoint_kind=[e.kind for e in fab.endpoints],
        endpoint_gbps=np.array([e.gbps for e in fab.endpoints]),
        endpoint_switch=np.array([switch_index[e.switch] for e in fab.endpoints], dtype=np.int32),
    )
