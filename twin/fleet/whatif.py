"""Whole-site fleet what-if: the same workload on the site as built and on the site with racks converted.

Converting a hall (colossus H4's 392 H100 racks to GB200 NVL72) changes what the fleet
can run: GPUs of another type and count, another power draw against the same generation,
other node sizes for the gangs.  This module builds the converted site (:func:`convert_site`)
and retargets jobs to its GPUs (:func:`retarget`); the what-if itself, one workload under one
policy on both sites over the same horizon, is :func:`twin.fleet.edit_whatif.fleet_edit_whatif`
with the conversion as its edit.

The converted site is built by :func:`convert_site` with the site editor's ``set_rack_type``
edit (:mod:`twin.site.edits`) and the normal site builder, with the design limits as
warnings (the conversion may overload transformers or loops; their count is reported,
``clustertwin project --scenario`` lists them).

What the fleet model does with a second GPU type (docs/fleet.md, "Whole-site what-if"):

* a job that names no GPU type runs on any node: a job smaller than a node shares a node of
  either type, a gang of whole nodes stays on nodes of the site's largest size (8-GPU H100
  nodes on colossus, not 4-GPU GB200 trays);
* ``retarget_kinds`` sends the jobs of those kinds that have no job file to the converted
  racks' GPU type (they then run only there, in whole trays);
* a job with a training job file keeps its file's hardware for its step time; a job with
  only a kind keeps its trace's run time on any GPU (a faster GPU does not shorten it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from twin.errors import InputError
from twin.fleet.workload import FleetJob
from twin.site.catalogue import Catalogue
from twin.site.tables import SiteTables


class WhatIfError(InputError):
    """A conversion or a what-if request that cannot be answered; the message names what is wrong."""


@dataclass(frozen=True)
class Conversion:
    """Racks to convert (halls, rows ``H4-R01`` or rack names, globs allowed) and the catalogue rack type.

    ``add_hall_like``: first add a hall built like that one (:func:`twin.site.add_hall.add_hall_like`,
    named after the site's last hall: H4 → H5) and convert it too, so "a new GB200 hall" is
    ``Conversion("GB200-NVL72", add_hall_like="H4")``.
    """

    rack_type: str
    halls: tuple[str, ...] = ()
    rows: tuple[str, ...] = ()
    racks: tuple[str, ...] = ()
    add_hall_like: str = ""

    def edit(self, added_hall: str = "") -> dict[str, Any]:
        """The site editor's ``set_rack_type`` edit for this conversion (``added_hall``: the hall added)."""
        halls = self.halls + ((added_hall,) if added_hall else ())
        if not (halls or self.rows or self.racks):
            raise WhatIfError("conversion: name at least one hall, row or rack to convert")
        out: dict[str, Any] = {"op": "set_rack_type", "type": self.rack_type}
        for key, names in (("halls", halls), ("rows", self.rows), ("racks", self.racks)):
            if names:
                out[key] = list(names)
        return out

    def describe(self) -> str:
        """In words: "add a hall like H4 as GB200-NVL72", "convert H4 to GB200-NVL72", or both."""
        parts = [f"add a hall like {self.add_hall_like} as {self.rack_type}"] if self.add_hall_like else []
        names = self.halls + self.rows + self.racks
        if names:
            parts.append(f"convert {', '.join(names)} to {self.rack_type}")
        return "; ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {
            "rack_type": self.rack_type,
            "halls": list(self.halls),
            "rows": list(self.rows),
            "racks": list(self.racks),
            "add_hall_like": self.add_hall_like or None,
        }


def convert_site(baseline: SiteTables, conversion: Conversion, catalogue: Catalogue | None = None) -> SiteTables:
    """``baseline`` with the racks of ``conversion`` retyped (after adding its hall, if it adds one),
    built with the design limits as warnings.

    Raises :class:`WhatIfError` naming the field for an unknown hall, row, rack or rack type,
    or for a site not loaded from a site file.
    """
    from twin.site import design
    from twin.site.add_hall import AddHallError, add_hall_like
    from twin.site.catalogue import load_catalogue
    from twin.site.edit_schema import EditError, parse_edit
    from twin.site.edits import apply_edits
    from twin.site.errors import ScenarioError, SiteError
    from twin.site.load import build_site_model
    from twin.site.schema import SiteFile

    if not isinstance(baseline.site_model, SiteFile):
        raise WhatIfError(f"{baseline.name}: not loaded from a site file; its racks cannot be converted")
    cat = catalogue or load_catalogue()
    model, added = baseline.site_model, ""
    try:
        if conversion.add_hall_like:
            model, added = add_hall_like(model, conversion.add_hall_like)
        edited = apply_edits(model, [parse_edit(conversion.edit(added), 0)], cat)
        return build_site_model(edited.model, baseline.source_file, cat, design.WARN)
    except AddHallError as exc:
        raise WhatIfError(f"new hall: {exc}") from None
    except EditError as exc:
        raise WhatIfError(f"conversion: {exc.field}: {exc.problem}") from None
    except (ScenarioError, SiteError) as exc:
        raise WhatIfError(f"conversion: {exc}") from None


def retarget(jobs: list[FleetJob], kinds: tuple[str, ...], gpu_type: str) -> list[FleetJob]:
    """``jobs`` with those of ``kinds`` that have no job file asking for ``gpu_type``."""
    if not kinds:
        return jobs
    return [replace(j, gpu_type=gpu_type) if j.kind in kinds and j.training is None else j for j in jobs]


def converted_gpu_type(baseline: SiteTables, converted: SiteTables) -> str:
    """The GPU type the conversion brought (the one with more GPUs than before)."""
    before, after = gpus_by_type(baseline), gpus_by_type(converted)
    gained = {name: n - before.get(name, 0) for name, n in after.items() if n > before.get(name, 0)}
    if not gained:
        raise WhatIfError("conversion: no GPU type gained GPUs (the racks already were of that type?)")
    return max(gained, key=lambda name: gained[name])


def gpus_by_type(state: SiteTables) -> dict[str, int]:
    """GPUs of each catalogue GPU type on ``state``."""
    if not state.n_gpus:
        return {}
    counts = np.bincount(state.gpu_spec, minlength=len(state.gpu_specs))
    return {spec.name: int(n) for spec, n in zip(state.gpu_specs, counts.tolist()) if n}
