"""Equipment catalogue: GPU, node, CDU and rack types from ``data/catalogue.toml``."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from twin.site.errors import SiteError
from twin.site.tables import CduSpec, GpuSpec

DATA_DIR = Path(__file__).resolve().parents[2] / "data"
CATALOGUE_FILE = DATA_DIR / "catalogue.toml"


@dataclass(frozen=True)
class NodeSpec:
    """A server type: its GPUs, PSUs and non-GPU power."""

    name: str
    gpu: str
    gpus: int
    height_u: int
    psus: int
    psus_required: int
    psu_rating_w: float
    base_power_w: float
    idle_base_power_w: float
    nics: int
    nic_gbps: float
    description: str = ""


@dataclass(frozen=True)
class RackSpec:
    """A rack type: which nodes, how many, and its in-rack CDU (``None`` if cooled in-row)."""

    name: str
    node: str
    nodes: int
    height_u: int
    feeds: int
    cdu: str | None = None
    description: str = ""
    row_cdu: str | None = None  # in-row CDU type the rack is designed for (racks without an in-rack CDU)
    racks_per_row_cdu: int | None = None  # racks per such CDU


@dataclass(frozen=True)
class Catalogue:
    """All equipment types, by name."""

    gpus: dict[str, GpuSpec]
    nodes: dict[str, NodeSpec]
    cdus: dict[str, CduSpec]
    racks: dict[str, RackSpec]
    source_file: str


SpecT = TypeVar("SpecT", GpuSpec, NodeSpec, CduSpec, RackSpec)


def _build(cls: type[SpecT], name: str, table: dict[str, Any], file: str, kind: str) -> SpecT:
    """Instantiate dataclass ``cls`` from a TOML table, naming unknown or missing fields."""
    known = {f.name for f in fields(cls)} - {"name"}
    unknown = set(table) - known
    if unknown:
        raise SiteError(file, f"{kind} {name!r}", sorted(unknown)[0], "unknown field")
    values: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in table.items()}
    try:
        return cls(name=name, **values)
    except TypeError as exc:
        missing = [f.name for f in fields(cls) if f.name not in table and f.name != "name"]
        raise SiteError(file, f"{kind} {name!r}", missing[0] if missing else "?", f"missing field ({exc})") from None


def _check_references(cat: Catalogue) -> None:
    file = cat.source_file
    for node in cat.nodes.values():
        if node.gpu not in cat.gpus:
            raise SiteError(file, f"node {node.name!r}", "gpu", f"unknown GPU type {node.gpu!r}")
    for rack in cat.racks.values():
        if rack.node not in cat.nodes:
            raise SiteError(file, f"rack {rack.name!r}", "node", f"unknown node type {rack.node!r}")
        if rack.cdu is not None and rack.cdu not in cat.cdus:
            raise SiteError(file, f"rack {rack.name!r}", "cdu", f"unknown CDU type {rack.cdu!r}")
        if rack.row_cdu is not None and rack.row_cdu not in cat.cdus:
            raise SiteError(file, f"rack {rack.name!r}", "row_cdu", f"unknown CDU type {rack.row_cdu!r}")
    for cdu in cat.cdus.values():
        supply, cap = cdu.capacity_curve_supply_c, cdu.capacity_curve_kw
        if len(supply) != len(cap) or len(supply) < 2 or any(b <= a for a, b in zip(supply, supply[1:])):
            raise SiteError(
                file,
                f"cdu {cdu.name!r}",
                "capacity_curve_supply_c",
                "needs ≥ 2 increasing temperatures, one per capacity point",
            )


def parse_catalogue(text: str, file: str) -> Catalogue:
    """Parse catalogue TOML ``text`` (``file`` names it in errors)."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SiteError(file, "catalogue", "-", f"not valid TOML: {exc}") from None
    cat = Catalogue(
        gpus={n: _build(GpuSpec, n, t, file, "gpu") for n, t in raw.get("gpu", {}).items()},
        nodes={n: _build(NodeSpec, n, t, file, "node") for n, t in raw.get("node", {}).items()},
        cdus={n: _build(CduSpec, n, t, file, "cdu") for n, t in raw.get("cdu", {}).items()},
        racks={n: _build(RackSpec, n, t, file, "rack") for n, t in raw.get("rack", {}).items()},
        source_file=file,
    )
    _check_references(cat)
    return cat


@lru_cache(maxsize=4)
def load_catalogue(path: Path = CATALOGUE_FILE) -> Catalogue:
    """Load and validate the catalogue file (cached per path)."""
    return parse_catalogue(Path(path).read_text(encoding="utf-8"), Path(path).name)
