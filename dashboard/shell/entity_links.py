"""Links from an entity (rack, CDU, power element, switch, job, GPU…) to the page that shows it.

Each page restores its selection from the query string; these are the parameter
names the pages read (``/floor?rack=``, ``/cdu?cdu=``, ``/cooling?loop=``, ``/power?element=``,
``/power?source=``, ``/fabric?switch=``, ``/jobs?job=``).
"""

from __future__ import annotations

from urllib.parse import urlencode

from twin.site.tables import SiteTables


def _name(names: list[str], entity_id, fallback: str | None) -> str | None:
    try:
        index = int(entity_id)
    except (TypeError, ValueError):
        return fallback
    return names[index] if 0 <= index < len(names) else fallback


def _gpu_rack_by_name(state: SiteTables, name: str | None) -> int | None:
    """The rack of a GPU named ``<node>/gpu<index>`` (as alerts name them), or None."""
    node = (name or "").split("/", 1)[0]
    try:
        return int(state.node_rack[state.node_name.index(node)]) if node else None
    except ValueError:
        return None


def entity_href(state: SiteTables, kind: str, entity_id=None, name: str | None = None) -> str | None:
    """The page URL showing entity ``kind``/``entity_id`` (``name`` as fallback), or None."""
    kind = (kind or "").lower()
    if kind == "rack":
        rack = _name(state.rack_name, entity_id, name)
        return "/floor?" + urlencode({"rack": rack}) if rack else None
    if kind == "node":
        try:
            rack_id = int(state.node_rack[int(entity_id)])
        except (TypeError, ValueError, IndexError):
            rack_id = None
        return "/floor?" + urlencode({"rack": state.rack_name[rack_id]}) if rack_id is not None else None
    if kind == "gpu":
        try:
            rack_id = int(state.gpu_rack[int(entity_id)])
        except (TypeError, ValueError, IndexError):
            rack_id = _gpu_rack_by_name(state, name)  # an alert's GPU name: "<node>/gpu<index>"
            if rack_id is None:
                return None
        return "/floor?" + urlencode({"rack": state.rack_name[rack_id], "metric": "max_gpu_temp_c"})
    if kind == "cdu":
        cdu = _name(state.cdu_name, entity_id, name)
        return "/cdu?" + urlencode({"cdu": cdu}) if cdu else "/cooling"
    if kind in ("loop", "plant"):
        loop = _name(state.loop_name, entity_id, name) if kind == "loop" else None
        return "/cooling?" + urlencode({"loop": loop}) if loop else "/cooling"
    if kind in ("power", "power_element", "busway", "ups", "transformer", "switchgear", "feed"):
        element = _name(state.power_name, entity_id, name)
        return "/power?" + urlencode({"element": element}) if element else "/power"
    if kind == "source":
        source = _name(state.source_name, entity_id, name)
        return "/power?" + urlencode({"source": source}) if source in state.source_name else "/power"
    if kind == "site":
        return "/power"
    if kind in ("switch", "link"):
        if kind == "link":
            try:
                entity_id = int(state.link_a[int(entity_id)])
            except (TypeError, ValueError, IndexError):
                return "/fabric"
        switch = _name(state.switch_name, entity_id, name if kind == "switch" else None)
        return "/fabric?" + urlencode({"switch": switch}) if switch else "/fabric"
    if kind == "job":
        return "/jobs?" + urlencode({"job": name}) if name else "/jobs"
    return None
