"""Scenario files resolved against a site: conditions (:mod:`twin.scenario.conditions`) and, when the
scenario has edits, the edit pipeline (:mod:`twin.scenario.whatif`)."""

from __future__ import annotations

from pathlib import Path

from twin.scenario.conditions import Scenario, ScenarioError, parse_scenario_doc, read_scenario_text, resolve_conditions
from twin.scenario.whatif import resolve
from twin.site.tables import SiteTables

__all__ = ["load_scenario", "parse_scenario"]


def parse_scenario(text: str, state: SiteTables, file: str = "<scenario>") -> Scenario:
    """Parse scenario TOML against ``state`` (``file`` names it in errors).

    With layout edits the returned :attr:`Scenario.state` is the edited site, built from
    ``state.site_model``; the inputs are resolved against it.
    """
    doc = parse_scenario_doc(text, file)
    if doc.site is not None and doc.site != state.name:
        raise ScenarioError(f"{file}: scenario.site: written for site {doc.site!r}, not {state.name!r}")
    if doc.edits:
        return resolve(state, doc)
    return resolve_conditions(doc, state)


def load_scenario(path: str | Path, state: SiteTables) -> Scenario:
    """Read and parse a scenario file."""
    path = Path(path)
    return parse_scenario(read_scenario_text(path), state, path.name)
