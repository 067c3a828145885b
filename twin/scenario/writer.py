"""Write a scenario back as TOML a person can read and diff: ``[scenario]``, ``[conditions]``, ``[[edits]]``.

:func:`export_scenario_toml` is the inverse of :func:`twin.scenario.conditions.parse_scenario_doc`:
keys in a fixed order, one edit per ``[[edits]]`` table, fields in the order of
the op models of :mod:`twin.site.edit_schema`, so ``export(parse(export(parse(text))))`` equals
``export(parse(text))`` and a one-edit change is a few-line diff.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from twin.scenario.conditions import ScenarioDoc
from twin.site.design import STRICT
from twin.site.edits import Edit

_CONDITION_ORDER = (
    "gpu_util_frac",
    "gpu_power_limit_w",
    "outdoor_dry_bulb_c",
    "outdoor_wet_bulb_c",
    "failed_power",
    "failed_sources",
    "failed_switches",
    "pumps_failed",
    "cdus_failed",
    "loop_supply_temp_c",
    "job",
    "idle_nodes_off",
    "fleet_util_frac",
)


def _value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False).replace("\x7f", "\\u007f")  # TOML refuses a raw DEL
    if isinstance(v, datetime):
        return v.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_value(str(k))} = {_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {type(v).__name__} as TOML")


def export_scenario_toml(doc: ScenarioDoc, edits: list[Edit] | None = None) -> str:
    """TOML text of ``doc`` with ``edits`` (default: ``doc.edits``)."""
    edits = doc.edits if edits is None else edits
    lines = ["[scenario]", f"name = {_value(doc.name)}"]
    if doc.description:
        lines.append(f"description = {_value(doc.description)}")
    if doc.site is not None:
        lines.append(f"site = {_value(doc.site)}")
    if doc.time is not None:
        lines.append(f"time = {_value(doc.time)}")
    if doc.settle_s is not None:
        lines.append(f"settle_s = {_value(doc.settle_s)}")
    if doc.design_limits != STRICT:
        lines.append(f"design_limits = {_value(doc.design_limits)}")
    if doc.conditions:
        lines += ["", "[conditions]"]
        for key in sorted(doc.conditions, key=lambda k: _CONDITION_ORDER.index(k) if k in _CONDITION_ORDER else 99):
            lines.append(f"{key} = {_value(doc.conditions[key])}")
    for edit in edits:
        lines += ["", "[[edits]]"]
        lines += [f"{key} = {_value(value)}" for key, value in edit.as_dict().items()]
    return "\n".join(lines) + "\n"
