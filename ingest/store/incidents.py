"""Incidents in the database: one :class:`~ingest.store.models.Incident` row per stored bundle, by site and name.

The bundle file (:mod:`ingest.replay.library`) holds the recording; the row makes the
incident part of the installation's records (listed with the site's other history, kept
when the file is moved).  Importing or recording a bundle again updates its row.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from ingest.store.models import Incident


def record_incident(engine: Engine, metadata: dict) -> Incident:
    """Insert or update the row of the bundle whose metadata is ``metadata`` (name, site, title, window)."""
    start, end = datetime.fromisoformat(metadata["start"]), datetime.fromisoformat(metadata["end"])
    with Session(engine) as session:
        row = session.exec(
            select(Incident).where(Incident.site_name == metadata["site_name"], Incident.name == metadata["name"])
        ).first()
        if row is None:
            row = Incident(site_name=metadata["site_name"], name=metadata["name"])
        row.description, row.start_at, row.end_at = metadata.get("title", ""), start, end
        session.add(row)
        session.commit()
        session.refresh(row)
        return row


def stored_incidents(engine: Engine) -> list[Incident]:
    """Every incident row, oldest window first."""
    with Session(engine) as session:
        return list(session.exec(select(Incident).order_by(Incident.start_at, Incident.name)).all())
