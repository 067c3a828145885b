"""Incidents in the database: one :class:`~ingest.store.models.Incident` row per stored bundle, by site and name.

The bundle file (:mod:`ingest.replay.library`) holds the recording; the row makes the
incident part of the installation's records (listed with the site's other history, kept
when the file is moved).  Importing or recording a bundle again updates its row.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from ingest.store.models import Incident

BUNDLE_SUFFIX = ".ctincident"  # a library file is <name>.ctincident (ingest.replay.bundle.SUFFIX)


def record_incident(engine: Engine, metadata: dict, path: Path | None = None) -> Incident:
    """Insert or update the row of the bundle whose metadata is ``metadata`` (name, site, title, window).

    With ``path`` (the stored bundle file) the row also keeps the whole metadata and the file's
    name, size and modification time, so listing the library reads them from here while the
    file is unchanged (:func:`ingest.replay.library.list_incidents`).
    """
    start, end = datetime.fromisoformat(metadata["start"]), datetime.fromisoformat(metadata["end"])
    with Session(engine) as session:
        row = session.exec(
            select(Incident).where(Incident.site_name == metadata["site_name"], Incident.name == metadata["name"])
        ).first()
        if row is None:
            row = Incident(site_name=metadata["site_name"], name=metadata["name"])
        row.description, row.start_at, row.end_at = metadata.get("title", ""), start, end
        if path is not None:
            stat = Path(path).stat()  # the stored file, or the same file under its temporary name before it lands
            row.bundle_file = f"{metadata['name']}{BUNDLE_SUFFIX}"
            row.bundle_bytes, row.bundle_mtime_ns = stat.st_size, stat.st_mtime_ns
            row.metadata_json = json.dumps(metadata, sort_keys=True)
        session.add(row)
        session.commit()
        session.refresh(row)
        return row


def stored_incidents(engine: Engine) -> list[Incident]:
    """Every incident row, oldest window first."""
    with Session(engine) as session:
        return list(session.exec(select(Incident).order_by(Incident.start_at, Incident.name)).all())
