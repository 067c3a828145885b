"""Calibrated parameters of a site: the ``[calibration]`` block of a site file, applied to its tables.

Replaying recorded incidents fits what the catalogue can only estimate (see docs/sites.md
for the block's schema):

- ``cdu_approach_delta_k`` [K] per named CDU, added to its catalogue approach (the total
  floored at :data:`MIN_APPROACH_K`);
- ``gpu_r_th_factor`` [1] per named GPU (``<host>/<index>``), multiplying its die-to-coolant
  thermal resistance;
- ``heat_capacity_factor`` [1], multiplying every GPU's heat capacity (both thermal nodes);
- ``junction_heat_frac`` and ``r_th_conv_frac`` [1], the two-node die model's split
  (:func:`twin.physics.thermal.two_node_coefficients`): the junction's share of the heat
  capacity and the convective (plate-to-coolant) share of the die resistance, fitted on
  recorded power steps (:mod:`twin.physics.diefit`); None keeps the catalogue's;
- ``psu_efficiency_points_frac`` [1], the PSU efficiency at the load points of
  :data:`twin.physics.power.PSU_LOAD_POINTS_FRAC` (the site's curve instead of the
  catalogue's; it goes to :attr:`SiteTables.psu_efficiency_points_frac`).

The engine reads these figures from the catalogue entries of the site's tables, so a
calibrated site carries variants of its GPU and CDU types (one per distinct fitted value,
named after the type with the value in brackets) and maps the fitted entities to them:
nothing in the engine knows about calibration.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from twin.arrays import FloatArray, IntArray
from twin.site.tables import SiteTables

if TYPE_CHECKING:
    from twin.site.schema import CalibrationSpec

SpecT = TypeVar("SpecT")  # a catalogue entry type (GPU or CDU spec)

MIN_APPROACH_K = 0.1  # a CDU cannot deliver coolant colder than its facility supply
DECIMALS = 4  # fitted values are kept to this many decimals (the variants they need stay few)
BLOCK = re.compile(r"(?ms)^\[calibration\][^\n]*\n.*?(?=^\[|\Z)")  # the block in a site file's text


def without_block(site_toml: str) -> str:
    """``site_toml`` without its ``[calibration]`` block (the site as the catalogue describes it)."""
    return BLOCK.sub("", site_toml)


def with_block(site_toml: str, state: SiteTables, cal: SiteCalibration) -> str:
    """``site_toml`` with its ``[calibration]`` block replaced by (or extended with) ``cal``'s."""
    return f"{without_block(site_toml).rstrip()}\n\n{to_block(state, cal)}"


@dataclass
class SiteCalibration:
    """Fitted parameters on a site's dense ids (see module docstring)."""

    cdu_approach_delta_k: np.ndarray  # float64 [n_cdus], 0 where not fitted
    gpu_r_th_factor: np.ndarray  # float64 [n_gpus], 1 where not fitted
    heat_capacity_factor: float = 1.0
    fitted_on: str = ""  # what the parameters were fitted on (incident and frames)
    junction_heat_frac: float | None = None  # the two-node split, None: the catalogue's
    r_th_conv_frac: float | None = None
    psu_efficiency_points_frac: np.ndarray | None = None  # [4] at PSU_LOAD_POINTS_FRAC, None: the catalogue's

    @classmethod
    def neutral(cls, state: SiteTables) -> SiteCalibration:
        """Parameters that change nothing."""
        return cls(np.zeros(state.n_cdus), np.ones(state.n_gpus))

    def rounded(self) -> SiteCalibration:
        """The values as a site file keeps them (:data:`DECIMALS`)."""
        return dataclasses.replace(
            self,
            cdu_approach_delta_k=np.round(self.cdu_approach_delta_k, DECIMALS),
            gpu_r_th_factor=np.round(self.gpu_r_th_factor, DECIMALS),
            heat_capacity_factor=round(float(self.heat_capacity_factor), DECIMALS),
            junction_heat_frac=None
            if self.junction_heat_frac is None
            else round(float(self.junction_heat_frac), DECIMALS),
            r_th_conv_frac=None if self.r_th_conv_frac is None else round(float(self.r_th_conv_frac), DECIMALS),
            psu_efficiency_points_frac=None
            if self.psu_efficiency_points_frac is None
            else np.round(np.asarray(self.psu_efficiency_points_frac, dtype=np.float64), DECIMALS),
        )


def gpu_names(state: SiteTables, gpus: np.ndarray) -> list[str]:
    """``<host>/<index>`` of ``gpus``, as the calibration block names them."""
    return [f"{state.node_name[state.gpu_node[g]]}/{state.gpu_index[g]}" for g in np.asarray(gpus, dtype=np.int64)]


def from_block(state: SiteTables, block: CalibrationSpec, file: str, strict: bool = True) -> SiteCalibration:
    """The parsed ``[calibration]`` block (:class:`twin.site.schema.CalibrationSpec`) on ``state``'s ids.

    ``strict``: a name the site lacks is an error; else it is left out (a what-if edit removed it).
    """
    from twin.site.errors import SiteError

    cal = SiteCalibration.neutral(state)
    cal.heat_capacity_factor, cal.fitted_on = block.heat_capacity_factor, block.fitted_on
    cal.junction_heat_frac, cal.r_th_conv_frac = block.junction_heat_frac, block.r_th_conv_frac
    if block.psu_efficiency_points_frac:
        cal.psu_efficiency_points_frac = np.asarray(block.psu_efficiency_points_frac, dtype=np.float64)
    cdu_index = {n: i for i, n in enumerate(state.cdu_name)}
    for name, delta in zip(block.cdus, block.cdu_approach_delta_k):
        if name not in cdu_index:
            if not strict:
                continue
            raise SiteError(file, "calibration", "cdus", f"unknown CDU {name!r}")
        cal.cdu_approach_delta_k[cdu_index[name]] = delta
    if block.gpus:
        node_index = {n: i for i, n in enumerate(state.node_name)}
        first_gpu = np.searchsorted(state.gpu_node, np.arange(state.n_nodes))
        per_node = np.bincount(state.gpu_node, minlength=state.n_nodes)
        for name, factor in zip(block.gpus, block.gpu_r_th_factor):
            host, _, index = name.rpartition("/")
            if host not in node_index or not index.isdigit() or int(index) >= per_node[node_index[host]]:
                if not strict:
                    continue
                raise SiteError(file, "calibration", "gpus", f"unknown GPU {name!r} (expected <host>/<index>)")
            cal.gpu_r_th_factor[first_gpu[node_index[host]] + int(index)] = factor
    return cal


def to_block(state: SiteTables, cal: SiteCalibration) -> str:
    """The ``[calibration]`` TOML block of ``cal`` (fitted entities only, values rounded)."""
    cal = cal.rounded()
    cdus = np.flatnonzero(cal.cdu_approach_delta_k != 0.0)
    gpus = np.flatnonzero(cal.gpu_r_th_factor != 1.0)

    def strings(names: Iterable[str]) -> str:
        return "[" + ", ".join(f'"{n}"' for n in names) + "]"

    def numbers(values: Iterable[float]) -> str:
        return "[" + ", ".join(f"{float(v):.{DECIMALS}f}" for v in values) + "]"

    fitted_on = cal.fitted_on.replace("\\", "/").replace('"', "'")
    return (
        "[calibration]\n"
        "# Fitted by `clustertwin replay --calibrate --save-calibration` (see docs/sites.md)\n"
        f'fitted_on = "{fitted_on}"\n'
        f"heat_capacity_factor = {cal.heat_capacity_factor:.{DECIMALS}f}\n"
        + ("" if cal.junction_heat_frac is None else f"junction_heat_frac = {cal.junction_heat_frac:.{DECIMALS}f}\n")
        + ("" if cal.r_th_conv_frac is None else f"r_th_conv_frac = {cal.r_th_conv_frac:.{DECIMALS}f}\n")
        + f"cdus = {strings(state.cdu_name[i] for i in cdus)}\n"
        f"cdu_approach_delta_k = {numbers(cal.cdu_approach_delta_k[cdus])}\n"
        f"gpus = {strings(gpu_names(state, gpus))}\n"
        f"gpu_r_th_factor = {numbers(cal.gpu_r_th_factor[gpus])}\n"
        + (
            ""
            if cal.psu_efficiency_points_frac is None
            else f"psu_efficiency_points_frac = {numbers(cal.psu_efficiency_points_frac)}\n"
        )
    )


def _variants(
    specs: list[SpecT], index: IntArray, values: FloatArray, neutral: float, make: Callable[[SpecT, float], SpecT]
) -> tuple[list[SpecT], IntArray]:
    """Catalogue entries extended by one variant per (entry, distinct non-neutral value) and the new index."""
    index = np.asarray(index, dtype=np.int64).copy()
    out = list(specs)
    fitted = np.flatnonzero(values != neutral)
    if fitted.size:
        pairs, inverse = np.unique(np.stack([index[fitted], values[fitted]]), axis=1, return_inverse=True)
        for base, value in pairs.T:
            out.append(make(specs[int(base)], float(value)))
        index[fitted] = len(specs) + inverse.ravel()
    return out, index.astype(np.int16)


def apply_calibration(state: SiteTables, cal: SiteCalibration) -> SiteTables:
    """``state`` with ``cal`` applied to its GPU and CDU catalogue entries (see module docstring)."""
    k = float(cal.heat_capacity_factor)
    split: dict[str, Any] = {}
    if cal.junction_heat_frac is not None:
        split["junction_heat_frac"] = float(cal.junction_heat_frac)
    if cal.r_th_conv_frac is not None:
        split["r_th_conv_frac"] = float(cal.r_th_conv_frac)
    gpu_specs = [
        dataclasses.replace(g, heat_capacity_j_per_k=g.heat_capacity_j_per_k * k, **split) for g in state.gpu_specs
    ]
    gpu_specs, gpu_spec = _variants(
        gpu_specs,
        state.gpu_spec,
        np.asarray(cal.gpu_r_th_factor, dtype=np.float64),
        1.0,
        lambda g, f: dataclasses.replace(
            g, name=f"{g.name} (R×{f:.{DECIMALS}f})", r_th_die_c_per_w=g.r_th_die_c_per_w * f
        ),
    )
    cdu_specs, cdu_spec = _variants(
        state.cdu_specs,
        state.cdu_spec,
        np.asarray(cal.cdu_approach_delta_k, dtype=np.float64),
        0.0,
        lambda c, d: dataclasses.replace(
            c, name=f"{c.name} (approach {d:+.{DECIMALS}f} K)", approach_k=max(c.approach_k + d, MIN_APPROACH_K)
        ),
    )
    psu = (
        state.psu_efficiency_points_frac
        if cal.psu_efficiency_points_frac is None
        else np.asarray(cal.psu_efficiency_points_frac, dtype=np.float64)
    )
    return dataclasses.replace(
        state,
        gpu_specs=gpu_specs,
        gpu_spec=gpu_spec,
        cdu_specs=cdu_specs,
        cdu_spec=cdu_spec,
        psu_efficiency_points_frac=psu,
    )
