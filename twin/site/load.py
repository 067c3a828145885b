"""Load a site file, check it, and expand it into the twin's struct-of-arrays state.

``load_site("colossus")`` reads ``data/sites/colossus.toml``; a path loads any file.
Every problem raises :class:`twin.site.errors.SiteError` naming file, entity and field, and
nothing is returned until the whole file has passed: a broken file never half-loads.
"""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path

import numpy as np

from twin.arrays import FloatArray, IntArray
from twin.site import design, expand, limits
from twin.site.catalogue import DATA_DIR, Catalogue, load_catalogue
from twin.site.errors import SiteError
from twin.site.expand import SourceExtra, SourceRows
from twin.site.fabricgen import Fabric, FabricDesignError, generate_fabric
from twin.site.racks import RackLayout, Racks
from twin.site.schema import LoopSpec, PlantSpec, PowerElementSpec, SiteFile, parse_site_file
from twin.site.tables import POWER_KINDS, SOURCE_KINDS, TIER_LEAF, CduSpec, SiteTables
from twin.textfile import read_text

SITES_DIR = DATA_DIR / "sites"
JOBS_DIR = DATA_DIR / "jobs"
WEATHER_FILE = DATA_DIR / "weather.toml"
POWER_SECTIONS = ("switchgear", "transformers", "ups", "busways")  # a site file's power element lists, top down
# allowed parent kind for each element kind (index into POWER_KINDS); None = may be a root
_PARENT_KINDS = {0: (None, 0), 1: (0,), 2: (1,), 3: (2, 1)}


def site_path(name_or_path: str | Path) -> Path:
    """Resolve a reference-site name (``demo``) or a file path."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        return path
    candidate = SITES_DIR / f"{name_or_path}.toml"
    if not candidate.exists():
        known = ", ".join(sorted(p.stem for p in SITES_DIR.glob("*.toml")))
        raise SiteError(str(name_or_path), "site", "name", f"no such site file (reference sites: {known})")
    return candidate


def load_site(name_or_path: str | Path, catalogue: Catalogue | None = None) -> SiteTables:
    """Load, validate and expand a site into :class:`SiteTables`."""
    path = site_path(name_or_path)
    return build_site(read_site_text(path), path.name, catalogue or load_catalogue())


def read_site_text(path: Path) -> str:
    """The text of a site file; unreadable, huge or non-UTF-8 files raise :class:`SiteError`."""
    return read_text(path, lambda problem: SiteError(str(path), "site file", "-", problem))


def default_job_path(name: str) -> Path:
    """The job file a site's ``default_job`` names: ``data/jobs/NAME.toml``, or a path ending in .toml."""
    return Path(name) if name.endswith(".toml") else JOBS_DIR / f"{name}.toml"


@lru_cache(maxsize=1)
def weather_keys() -> frozenset[str]:
    """Keys of the weather curves in ``data/weather.toml``."""
    with WEATHER_FILE.open("rb") as fh:
        return frozenset(tomllib.load(fh))


def build_site(text: str, file: str, catalogue: Catalogue) -> SiteTables:
    """Parse site TOML ``text`` and build its state (``file`` names it in errors)."""
    spec, _ = parse_site_file(text, file)
    return _calibrated(_Builder(spec, file, catalogue).build(), spec, file, strict=True)


def _calibrated(tables: SiteTables, spec: SiteFile, file: str, strict: bool) -> SiteTables:
    """``tables`` with the site file's ``[calibration]`` block applied (:mod:`twin.site.calibration`).

    ``strict``: a CDU or GPU the block names must exist (an edited model may have removed it).
    """
    if spec.calibration is None:
        return tables
    from twin.site.calibration import apply_calibration, from_block

    return apply_calibration(tables, from_block(tables, spec.calibration, file, strict=strict))


def build_site_model(spec: SiteFile, file: str, catalogue: Catalogue, design_limits: str = design.STRICT) -> SiteTables:
    """Build the state of an already parsed (e.g. edited) site model.

    ``design_limits`` is :data:`twin.site.design.STRICT` (an exceeded rating is a
    :class:`SiteError`) or :data:`~twin.site.design.WARN` (it is kept in
    ``SiteTables.design_findings`` as a warning).
    """
    return _calibrated(_Builder(spec, file, catalogue, design_limits).build(), spec, file, strict=False)


class _Builder:
    """Expands one validated :class:`SiteFile` into a :class:`SiteTables`."""

    def __init__(self, spec: SiteFile, file: str, catalogue: Catalogue, design_limits: str = design.STRICT) -> None:
        self.spec, self.file, self.cat, self.policy = spec, file, catalogue, design_limits

    def fail(self, entity: str, field: str, message: str) -> SiteError:
        return SiteError(self.file, entity, field, message)

    @staticmethod
    def _unique(names: list[str], kind: str, file: str) -> dict[str, int]:
        index: dict[str, int] = {}
        for i, name in enumerate(names):
            if name in index:
                raise SiteError(file, f"{kind} {name!r}", "name", "duplicate name")
            index[name] = i
        return index

    # ------------------------------------------------------------------ power
    def power(self) -> tuple[list[tuple[int, PowerElementSpec]], dict[str, int], IntArray]:
        elements: list[tuple[int, PowerElementSpec]] = []
        for kind, section in enumerate(POWER_SECTIONS):
            elements += [(kind, e) for e in getattr(self.spec.power, section)]
        index = self._unique([e.name for _, e in elements], "power element", self.file)
        depth = np.full(len(elements), -1)
        for kind, e in elements:
            entity = f"{POWER_KINDS[kind]} {e.name!r}"
            if e.parent is None:
                if None not in _PARENT_KINDS[kind]:
                    raise self.fail(entity, "parent", f"a {POWER_KINDS[kind]} needs a parent")
                continue
            if e.parent not in index:
                raise self.fail(entity, "parent", f"{e.parent!r} does not exist")
            parent_kind = elements[index[e.parent]][0]
            if parent_kind not in _PARENT_KINDS[kind]:
                raise self.fail(
                    entity,
                    "parent",
                    f"{e.parent!r} is a {POWER_KINDS[parent_kind]}, which cannot feed a {POWER_KINDS[kind]}",
                )
        for i in range(len(elements)):  # depth by walking up; cycles are impossible across kinds
            chain, j = 0, i
            while (parent := elements[j][1].parent) is not None:
                j, chain = index[parent], chain + 1
                if chain > len(elements):
                    raise self.fail(f"power element {elements[i][1].name!r}", "parent", "parent cycle")
            depth[i] = chain
        order = np.argsort(depth, kind="stable")
        elements = [elements[i] for i in order]
        index = {e.name: i for i, (_, e) in enumerate(elements)}
        return elements, index, depth[order]

    def sources(self, power_index: dict[str, int], elements: list[tuple[int, PowerElementSpec]]) -> SourceRows:
        names: list[str] = []
        kinds: list[int] = []
        cap: list[float] = []
        energy: list[float] = []
        ramp: list[float] = []
        bus: list[int] = []
        extra: list[SourceExtra] = []
        for s in self.spec.power.sources:
            if s.bus not in power_index or elements[power_index[s.bus]][0] != 0:
                raise self.fail(f"source {s.name!r}", "bus", f"{s.bus!r} is not a switchgear of this site")
            for u in range(s.units):
                names.append(s.name if s.units == 1 else f"{s.name}-{u + 1:02d}")
                kinds.append(SOURCE_KINDS.index(s.kind))
                cap.append(s.unit_mw)
                energy.append(s.energy_mwh / s.units if s.kind == "battery" else 0.0)
                ramp.append(s.ramp_mw_per_s)
                bus.append(power_index[s.bus])
                extra.append(
                    (
                        s.unit_mw * (s.load_step_frac or 1.0),
                        s.iso_8528_class or "",
                        s.derate_frac_per_k,
                        s.rated_ambient_c,
                        s.roundtrip_efficiency_frac,
                        s.inertia_h_s,
                        s.droop_frac,
                        s.governor_s,
                        s.overspeed_trip_frac,
                        s.export_limit_mw,
                        s.short_circuit_mva,
                        s.voltage_change_max_frac,
                    )
                )
        self._unique(names, "source", self.file)
        return names, kinds, cap, energy, ramp, bus, extra

    # ---------------------------------------------------------------- cooling
    def cooling(self) -> tuple[list[PlantSpec], dict[str, int], list[LoopSpec], dict[str, int]]:
        plants = self.spec.cooling.plants
        plant_index = self._unique([p.name for p in plants], "plant", self.file)
        loops = self.spec.cooling.loops
        loop_index = self._unique([lp.name for lp in loops], "loop", self.file)
        for lp in loops:
            if lp.plant not in plant_index:
                raise self.fail(f"loop {lp.name!r}", "plant", f"{lp.plant!r} does not exist")
        return plants, plant_index, loops, loop_index

    # ---------------------------------------------------------------- compute
    def racks(
        self, power_index: dict[str, int], elements: list[tuple[int, PowerElementSpec]], loop_index: dict[str, int]
    ) -> Racks:
        self._unique([h.name for h in self.spec.halls], "hall", self.file)
        layout = RackLayout(self.spec, self.cat, self.file, power_index, elements, loop_index)
        r = layout.build()
        layout.check_touched_positions(r)
        return r

    def check_positions(self, r: Racks) -> None:
        key = np.stack([np.asarray(r.hall), np.round(np.asarray(r.x_m) * 10), np.round(np.asarray(r.y_m) * 10)], 1)
        _, first, counts = np.unique(key, axis=0, return_index=True, return_counts=True)
        if (counts > 1).any():
            i = first[np.argmax(counts > 1)]
            raise self.fail(
                f"rack {r.name[i]!r}", "position", f"({r.x_m[i]:.1f} m, {r.y_m[i]:.1f} m) is taken by another rack"
            )
        self._unique(r.name, "rack", self.file)

    # ------------------------------------------------------------------ build
    def check_references(self) -> None:
        """Names of things outside the site file: weather curve and default job."""
        info = self.spec.site
        if info.weather not in weather_keys():
            raise self.fail(
                "site",
                "weather",
                f"no weather curve {info.weather!r} in {WEATHER_FILE.name} (have: {', '.join(sorted(weather_keys()))})",
            )
        if info.default_job and not default_job_path(info.default_job).is_file():
            raise self.fail("site", "default_job", f"no job file {info.default_job!r} in data/jobs/")

    def check_counts(self) -> None:
        """Every count and the entity total within :mod:`twin.site.limits`, before anything is expanded."""
        rows = [(hall, row) for hall in self.spec.halls for row in hall.rows]
        if len(rows) > limits.MAX_ROWS:
            raise self.fail("halls", "rows", f"{len(rows):,} rows, more than the limit of {limits.MAX_ROWS:,}")
        n_racks = n_nodes = n_gpus = n_cdus = 0
        for hall, row in rows:
            entity = f"row {hall.name}/{row.name}"
            rack_spec = self.cat.racks.get(row.rack_type)
            if rack_spec is None:
                raise self.fail(
                    entity,
                    "rack_type",
                    f"unknown rack type {row.rack_type!r} (catalogue: {', '.join(sorted(self.cat.racks))})",
                )
            n_racks += row.racks
            n_nodes += row.racks * rack_spec.nodes
            n_gpus += row.racks * rack_spec.nodes * self.cat.nodes[rack_spec.node].gpus
            n_cdus += row.racks if rack_spec.cdu else -(-row.racks // (row.racks_per_cdu or row.racks))
        units = sum(s.units for s in self.spec.power.sources)
        for field, count, limit in (
            ("racks", n_racks, limits.MAX_RACKS),
            ("nodes", n_nodes, limits.MAX_NODES),
            ("gpus", n_gpus, limits.MAX_GPUS),
            ("units", units, limits.MAX_SOURCE_UNITS),
        ):
            if count > limit:
                raise self.fail("site", field, f"{count:,} {field} in total, more than the limit of {limit:,}")
        p = self.spec.power
        total = (
            n_racks
            + n_nodes
            + n_gpus
            + n_cdus
            + units
            + len(p.switchgear)
            + len(p.transformers)
            + len(p.ups)
            + len(p.busways)
        )
        if total > limits.MAX_ENTITIES:
            raise self.fail(
                "site", "entities", f"{total:,} entities in total, more than the limit of {limits.MAX_ENTITIES:,}"
            )

    def build(self) -> SiteTables:
        """The site's tables: every check, then nodes, GPUs, design findings and the fabric."""
        self.check_references()
        self.check_counts()
        elements, power_index, depth = self.power()
        src = self.sources(power_index, elements)
        plants, plant_index, loops, loop_index = self.cooling()
        r = self.racks(power_index, elements, loop_index)
        self.check_positions(r)
        comp = expand.Compute.of(r, self.cat)
        node_name = comp.node_names(r, self.spec.site.hostname_pattern)
        self._unique(node_name, "node", self.file)
        cdus = expand.CduTypes.of(r.cdu_name, r.cdu_spec_name, self.cat)
        rack_full_kw = comp.rack_full_kw(len(r.name))
        findings = self.design_findings(
            rack_full_kw,
            np.asarray(r.cdu, dtype=np.int32),
            np.asarray(r.feed_a, dtype=np.int32),
            np.asarray(r.feed_b, dtype=np.int32),
            r.cdu_name,
            cdus.spec_id,
            cdus.specs,
            r.cdu_loop,
            loops,
            plants,
            plant_index,
            elements,
            depth,
            src,
        )
        fabric, switch_index = self.fabric(r, comp, findings)
        return SiteTables(
            **expand.site_info(self.spec, self.file),
            **expand.rack_columns(self.spec, r, comp),
            **comp.node_columns(node_name),
            **expand.cooling_columns(plants, plant_index, loops, r, cdus),
            **expand.source_columns(src),
            **expand.power_columns(self.spec.power, elements, power_index, depth),
            **expand.fabric_columns(self.spec.fabric, fabric, switch_index),
            rack_full_kw=rack_full_kw,
            design_findings=findings,
            site_model=self.spec,
        )

    def fabric(
        self, r: Racks, comp: expand.Compute, findings: list[design.DesignFinding]
    ) -> tuple[Fabric, dict[str, int]]:
        """The generated fabric and its switches by name; leaf port findings are added to ``findings``."""
        fab = self.spec.fabric
        if (comp.gpu_index >= fab.rails).any():
            raise self.fail(
                "fabric", "rails", f"nodes have {int(comp.gpu_index.max()) + 1} GPUs but only {fab.rails} rails"
            )
        try:
            fabric = generate_fabric(
                np.asarray(r.array)[comp.gpu_rack],
                comp.gpu_rail(fab.rails),
                radix=fab.radix,
                rails=fab.rails,
                pod_arrays=fab.pod_arrays,
                link_gbps=fab.link_gbps,
                leaf_oversubscription=fab.leaf_oversubscription,
                spine_oversubscription=fab.spine_oversubscription,
                leaf_spine_parallel=fab.leaf_spine_parallel,
                allow_leaf_overflow=self.policy == design.WARN,
            )
        except FabricDesignError as exc:
            field, _, message = str(exc).partition(": ")
            raise self.fail("fabric", field, message) from None
        leaves = np.flatnonzero(fabric.switch_tier == TIER_LEAF)
        leaf_nics = np.bincount(fabric.gpu_leaf, minlength=leaves.size)
        findings += design.fabric_findings(
            [fabric.switch_name[i] for i in leaves], leaf_nics, fabric.leaf_down_ports, self.policy
        )
        switch_index = {n: i for i, n in enumerate(fabric.switch_name)}
        for ep in fab.endpoints:
            if ep.switch not in switch_index:
                raise self.fail(f"fabric endpoint {ep.name!r}", "switch", f"link to unknown switch {ep.switch!r}")
        return fabric, switch_index

    # ------------------------------------------------------------ design checks
    def design_findings(
        self,
        rack_full_kw: FloatArray,
        rack_cdu: IntArray,
        feed_a: IntArray,
        feed_b: IntArray,
        cdu_name: list[str],
        cdu_spec: IntArray,
        cdu_specs: list[CduSpec],
        cdu_loop: list[int],
        loops: list[LoopSpec],
        plants: list[PlantSpec],
        plant_index: dict[str, int],
        elements: list[tuple[int, PowerElementSpec]],
        depth: IntArray,
        src: SourceRows,
    ) -> list[design.DesignFinding]:
        """Every design check of :mod:`twin.site.design`; under ``strict`` the first exceeded rating raises."""
        setpoint = np.array([plants[plant_index[lp.plant]].supply_setpoint_c for lp in loops])[cdu_loop]
        supply_c = np.zeros(len(cdu_name))
        capacity_kw = np.zeros(len(cdu_name))
        for s, cs in enumerate(cdu_specs):
            mine = cdu_spec == s
            supply_c[mine] = setpoint[mine] + cs.approach_k
            capacity_kw[mine] = np.interp(supply_c[mine], cs.capacity_curve_supply_c, cs.capacity_curve_kw)
        pel = [e for _, e in elements]
        names = [e.name for e in pel]
        parent_index = {n: i for i, n in enumerate(names)}
        findings = design.cdu_findings(rack_full_kw, rack_cdu, cdu_name, supply_c, capacity_kw, self.policy)
        findings += design.power_findings(
            rack_full_kw,
            feed_a,
            feed_b,
            names,
            np.array([k for k, _ in elements]),
            np.array([parent_index[e.parent] if e.parent else -1 for e in pel], dtype=np.int64),
            np.array([e.efficiency_frac for e in pel]),
            np.asarray(depth, dtype=np.int64),
            np.array([e.usable_rating_kw for e in pel]),
            np.array([e.nameplate_kw for e in pel]),
            self.policy,
        )
        findings += design.cooling_findings(
            rack_full_kw,
            rack_cdu,
            np.asarray(cdu_loop, dtype=np.int64),
            [lp.name for lp in loops],
            np.array([lp.capacity_kw for lp in loops]),
            np.array([plant_index[lp.plant] for lp in loops]),
            [p.name for p in plants],
            np.array([p.chillers * p.chiller_kw for p in plants]),
            self.policy,
        )
        findings += design.generation_findings(
            self.spec.site.name, rack_full_kw, self.spec.site.site_overhead_mw, np.asarray(src[2], dtype=np.float64)
        )
        for f in findings:
            if f.severity == design.ERROR:
                raise self.fail(*design.ERROR_AT[f.check](f.element), f.message)
        return findings
