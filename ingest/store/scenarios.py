"""Stored what-if scenarios: create, rename, duplicate, delete, append an edit, undo, redo, export, import.

A stored scenario is a name, a site and a baseline site version, the scenario TOML
without its edits (``[scenario]``, ``[conditions]``), and an ordered list of edits with an
undo/redo position (:class:`ingest.store.models.Scenario`).  Every change that can be
wrong is validated first against the baseline (the edits up to the position plus the new
one are resolved by :func:`twin.scenario.whatif.resolve`); on an error nothing stored
changes and the :class:`twin.errors.InputError` (an :class:`twin.site.edits.EditError`
naming the edit's index and field) reaches the caller.  Edits are stored as their schema
writes them (:meth:`twin.site.edits.Edit.as_dict`) and read back through the same schema,
older spellings included (:func:`_edits`).

Functions take an engine from :func:`ingest.store.db.open_database` and return
:class:`StoredScenario` records, detached from any session.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from ingest.store.models import Scenario as ScenarioRow
from ingest.store.models import SiteVersion, utcnow
from twin.errors import InputError
from twin.scenario.conditions import Scenario, ScenarioDoc, parse_scenario_doc, with_fleet
from twin.scenario.whatif import resolve
from twin.scenario.writer import export_scenario_toml
from twin.site.catalogue import load_catalogue
from twin.site.edits import Edit, parse_edit
from twin.site.load import build_site, load_site
from twin.site.tables import SiteTables

MAX_NAME_CHARS = 200


class ScenarioStoreError(InputError):
    """A stored-scenario operation is refused: unknown id, duplicate name, nothing to undo."""


@dataclass(frozen=True)
class StoredScenario:
    """One stored scenario as the UI shows it."""

    id: int
    site_name: str
    name: str
    description: str
    baseline_version: int | None
    design_limits: str
    edits: tuple[Edit, ...]  # every kept edit; the first ``position`` are applied
    position: int
    created_at: datetime
    updated_at: datetime
    content: str

    @property
    def applied(self) -> list[Edit]:
        return list(self.edits[: self.position])

    @property
    def can_undo(self) -> bool:
        return self.position > 0

    @property
    def can_redo(self) -> bool:
        return self.position < len(self.edits)

    def doc(self) -> ScenarioDoc:
        """The scenario document with the applied edits."""
        doc = parse_scenario_doc(self.content, f"{self.name}.toml")
        doc.edits = self.applied
        doc.design_limits = self.design_limits
        return doc


def _edits(text: str) -> tuple[Edit, ...]:
    """The stored edits in the current spelling.

    Rows written before a field was renamed (:data:`twin.site.edit_schema.RENAMED`: a CDU's
    setpoint stored as ``supply_temp_c``) are read through :func:`twin.site.edits.upgrade_edit`;
    the row itself is rewritten in the current spelling by its next change (append, undo, redo).
    """
    return tuple(parse_edit(raw, i, upgrade=True) for i, raw in enumerate(json.loads(text)))


def _stored(row: ScenarioRow) -> StoredScenario:
    return StoredScenario(
        row.id,
        row.site_name,
        row.name,
        row.description,
        row.baseline_version,
        row.design_limits,
        _edits(row.edits_json),
        row.position,
        row.created_at,
        row.updated_at,
        row.content,
    )


def _edits_json(edits) -> str:
    return json.dumps([e.as_dict() for e in edits], ensure_ascii=False)


def _row(session: Session, scenario_id: int) -> ScenarioRow:
    row = session.get(ScenarioRow, scenario_id)
    if row is None:
        raise ScenarioStoreError(f"scenario {scenario_id}: no such scenario")
    return row


def _check_name(session: Session, site_name: str, name: str, exclude: int | None = None) -> None:
    if not name or len(name) > MAX_NAME_CHARS or not name.isprintable():
        raise ScenarioStoreError(f"scenario name {name!r}: give 1–{MAX_NAME_CHARS} printable characters")
    clash = session.exec(
        select(ScenarioRow).where(ScenarioRow.site_name == site_name, ScenarioRow.name == name)
    ).first()
    if clash is not None and clash.id != exclude:
        raise ScenarioStoreError(f"scenario name {name!r}: site {site_name!r} has a scenario of that name")


def baseline_state(engine: Engine, site_name: str, baseline_version: int | None) -> SiteTables:
    """The baseline site: the stored site version, or the site file as loaded when None."""
    if baseline_version is None:
        return load_site(site_name)
    with Session(engine) as session:
        row = session.exec(
            select(SiteVersion).where(SiteVersion.name == site_name, SiteVersion.version == baseline_version)
        ).first()
    if row is None:
        raise ScenarioStoreError(f"site {site_name!r}: no stored version {baseline_version}")
    return build_site(row.content, f"{site_name} v{baseline_version}", load_catalogue())


def validate(baseline: SiteTables, doc: ScenarioDoc) -> Scenario:
    """Resolve ``doc`` on ``baseline``: raises the edit's error, returns the scenario otherwise."""
    return resolve(baseline, doc)


def answer(engine: Engine, scenario_id: int, baseline: SiteTables):
    """The :class:`~twin.scenario.reports.Comparison` of a stored scenario's applied edits against ``baseline``
    (:func:`twin.scenario.compare.compare`)."""
    from twin.scenario.compare import compare  # the twin engine is needed only here

    return compare(baseline, validate(baseline, with_fleet(get_scenario(engine, scenario_id).doc())))


# --------------------------------------------------------------------- reading
def list_scenarios(engine: Engine, site_name: str | None = None) -> list[StoredScenario]:
    """Stored scenarios (of one site), by name."""
    with Session(engine) as session:
        query = select(ScenarioRow)
        if site_name is not None:
            query = query.where(ScenarioRow.site_name == site_name)
        return [_stored(r) for r in sorted(session.exec(query).all(), key=lambda r: (r.site_name, r.name, r.id))]


def get_scenario(engine: Engine, scenario_id: int) -> StoredScenario:
    with Session(engine) as session:
        return _stored(_row(session, scenario_id))


def find_scenario(engine: Engine, site_name: str, name: str) -> StoredScenario | None:
    """The scenario called ``name`` on ``site_name``, or None."""
    with Session(engine) as session:
        row = session.exec(
            select(ScenarioRow).where(ScenarioRow.site_name == site_name, ScenarioRow.name == name)
        ).first()
        return _stored(row) if row is not None else None


# --------------------------------------------------------------------- writing
def create_scenario(
    engine: Engine,
    site_name: str,
    name: str,
    *,
    description: str = "",
    baseline_version: int | None = None,
    design_limits: str = "strict",
    content: str | None = None,
    edits: list[Edit] | tuple = (),
    baseline: SiteTables | None = None,
) -> StoredScenario:
    """A new scenario; with ``baseline`` its edits and conditions are validated first."""
    header = ScenarioDoc(name=name, description=description, design_limits=design_limits)
    content = export_scenario_toml(header, []) if content is None else content
    doc = parse_scenario_doc(content, f"{name}.toml")
    doc.edits, doc.design_limits = list(edits), design_limits
    if baseline is not None:
        validate(baseline, doc)
    with Session(engine) as session:
        _check_name(session, site_name, name)
        row = ScenarioRow(
            site_name=site_name,
            name=name,
            description=description,
            content=content,
            baseline_version=baseline_version,
            edits_json=_edits_json(edits),
            position=len(edits),
            design_limits=design_limits,
        )
        session.add(row)
        session.commit()
        session.refresh(row)
        return _stored(row)


def rename_scenario(engine: Engine, scenario_id: int, name: str) -> StoredScenario:
    with Session(engine) as session:
        row = _row(session, scenario_id)
        _check_name(session, row.site_name, name, exclude=row.id)
        doc = parse_scenario_doc(row.content, f"{row.name}.toml")
        doc.name = name
        row.name, row.content, row.updated_at = name, export_scenario_toml(doc, []), utcnow()
        session.add(row)
        session.commit()
        session.refresh(row)
        return _stored(row)


def duplicate_scenario(engine: Engine, scenario_id: int, name: str | None = None) -> StoredScenario:
    """A copy with its applied edits (the redo tail is not copied), named ``<name> (copy)`` by default."""
    src = get_scenario(engine, scenario_id)
    name = name or f"{src.name} (copy)"
    doc = parse_scenario_doc(src.content, f"{src.name}.toml")
    doc.name = name
    return create_scenario(
        engine,
        src.site_name,
        name,
        description=src.description,
        baseline_version=src.baseline_version,
        design_limits=src.design_limits,
        content=export_scenario_toml(doc, []),
        edits=src.applied,
    )


def delete_scenario(engine: Engine, scenario_id: int) -> None:
    with Session(engine) as session:
        session.delete(_row(session, scenario_id))
        session.commit()


def append_edit(engine: Engine, scenario_id: int, edit: Edit | dict, baseline: SiteTables) -> StoredScenario:
    """Validate the applied edits plus ``edit`` on ``baseline``, then store it (dropping the redo tail)."""
    return append_edits(engine, scenario_id, [edit], baseline)


def append_edits(engine: Engine, scenario_id: int, edits: list[Edit | dict], baseline: SiteTables) -> StoredScenario:
    """:func:`append_edit` for several edits at once: all are stored, or none."""
    current = get_scenario(engine, scenario_id)
    new = [e if isinstance(e, Edit) else parse_edit(e, current.position + k) for k, e in enumerate(edits)]
    doc = current.doc()
    doc.edits = current.applied + new
    validate(baseline, doc)
    return _update(engine, current, doc.edits, len(doc.edits))


def undo(engine: Engine, scenario_id: int) -> StoredScenario:
    current = get_scenario(engine, scenario_id)
    if not current.can_undo:
        raise ScenarioStoreError(f"scenario {current.name!r}: nothing to undo")
    return _update(engine, current, current.edits, current.position - 1)


def redo(engine: Engine, scenario_id: int) -> StoredScenario:
    current = get_scenario(engine, scenario_id)
    if not current.can_redo:
        raise ScenarioStoreError(f"scenario {current.name!r}: nothing to redo")
    return _update(engine, current, current.edits, current.position + 1)


def set_design_limits(engine: Engine, scenario_id: int, design_limits: str, baseline: SiteTables) -> StoredScenario:
    """Switch the policy (``strict`` or ``warn``); going strict validates the applied edits first."""
    current = get_scenario(engine, scenario_id)
    doc = current.doc()
    doc.design_limits = design_limits
    validate(baseline, doc)
    with Session(engine) as session:
        row = _row(session, scenario_id)
        row.design_limits, row.updated_at = design_limits, utcnow()
        session.add(row)
        session.commit()
        session.refresh(row)
        return _stored(row)


def _update(engine: Engine, current: StoredScenario, edits, position: int) -> StoredScenario:
    with Session(engine) as session:
        row = _row(session, current.id)
        if row.updated_at != current.updated_at or row.position != current.position:
            raise ScenarioStoreError(f"scenario {current.name!r}: changed by someone else meanwhile; reload it")
        row.edits_json, row.position, row.updated_at = _edits_json(edits), position, utcnow()
        session.add(row)
        session.commit()
        session.refresh(row)
        return _stored(row)


# ----------------------------------------------------------------- TOML files
def export_toml(engine: Engine, scenario_id: int) -> str:
    """The scenario as TOML with its applied edits (what ``clustertwin project --scenario`` reads)."""
    current = get_scenario(engine, scenario_id)
    return export_scenario_toml(current.doc())


def import_toml(
    engine: Engine,
    site_name: str,
    text: str,
    *,
    name: str | None = None,
    baseline: SiteTables | None = None,
    baseline_version: int | None = None,
) -> StoredScenario:
    """Store a scenario file as a new scenario (validated on ``baseline`` when given)."""
    doc = parse_scenario_doc(text, "imported.toml")
    name = name or doc.name
    doc.name = name
    edits = list(doc.edits)
    return create_scenario(
        engine,
        site_name,
        name,
        description=doc.description,
        baseline_version=baseline_version,
        design_limits=doc.design_limits,
        content=export_scenario_toml(doc, []),
        edits=edits,
        baseline=baseline,
    )
