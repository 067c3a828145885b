"""Adding an incident to the user's library, as ``clustertwin incidents import`` and the API do it.

:func:`import_incident` takes a bundle (``format = "bundle"``) or a recording of another
system (:mod:`ingest.imports.run`), validates it completely before anything is written
(a refused file leaves the library and the database as they were) and stores it;
:func:`record_in_database` then adds the incident's row and, with an actor, the audit
entry ``incident.import`` / ``incident.record`` (who, what, before and after).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from ingest.replay.bundle import read_bundle
from ingest.replay.library import before_rename, find_incident, import_bundle_file, library_path

log = logging.getLogger(__name__)


@dataclass
class ImportRequest:
    """What to import: the attributes of ``clustertwin incidents import``'s arguments."""

    source: str
    format: str = "bundle"
    site: str = "auto"
    name: str | None = None
    replace: bool = False
    start: str | None = None
    end: str | None = None
    step: float = 5.0
    run_log: str | None = None
    dir: str | None = None
    db: str | None = None
    engine: object | None = None  # a database engine to use instead of opening ``db``


@dataclass
class Imported:
    """A stored incident: its name, bundle file and metadata, the importer's report, whether it replaced one."""

    name: str
    path: Path
    metadata: dict
    report: dict = field(default_factory=dict)
    replaced: bool = False

    def audit_state(self) -> dict:
        """What an audit entry keeps of it: site, window, file size."""
        return audit_state_of(self.path, self.metadata)


def _existing(name: str | None, directory) -> bool:
    try:
        return bool(name) and library_path(name, directory).exists()
    except ValueError:
        return False


def import_incident(request, before_land=None) -> Imported:
    """Validate and store the incident of ``request`` (an :class:`ImportRequest` or the CLI's arguments).

    ``before_land(path, metadata)`` runs once the bundle is written and synced under its
    temporary name, before it is renamed into the library (its database row and audit
    entry: :func:`ingest.replay.library.before_rename`); an exception from it stores nothing.
    Raises :class:`ingest.replay.bundle.BundleError` or another ``ValueError`` naming what is
    wrong, and ``OSError`` for a file that cannot be read.
    """
    if before_land is not None:
        with before_rename(before_land):
            return import_incident(request)
    if request.format == "bundle":
        path, metadata, replaced = import_bundle_file(
            Path(request.source), request.dir, name=request.name, replace=request.replace
        )
        return Imported(metadata["name"], path, metadata, {}, replaced)
    from ingest.imports.run import default_name, import_recording

    replaced = _existing(request.name or default_name(request), request.dir)
    name, report = import_recording(request)
    path = find_incident(name, request.dir)
    return Imported(name, path, read_bundle(path).metadata, report, replaced)


def audit_state_of(path: Path, metadata: dict) -> dict:
    """What an audit entry keeps of a stored bundle: site, window, file size."""
    return {
        "site": metadata["site_name"],
        "start": metadata["start"],
        "end": metadata["end"],
        "bytes": Path(path).stat().st_size,
    }


def replaces(metadata: dict, directory) -> bool:
    """Whether storing the bundle of ``metadata`` replaces an incident of the library."""
    return _existing(metadata["name"], directory)


def record_in_database(
    engine,
    metadata: dict,
    *,
    actor: str | None = None,
    action: str = "incident.import",
    before=None,
    after=None,
    address: str = "",
    path: Path | None = None,
) -> None:
    """The incident's row in the database (``metadata`` of its bundle at ``path``) and, with ``actor``, its audit entry."""
    from ingest.store import audit
    from ingest.store.incidents import record_incident

    record_incident(engine, metadata, path)
    if actor is not None:
        audit.record(engine, actor, action, f"incident {metadata['name']}", before, after, address=address)
