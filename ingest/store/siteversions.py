"""Site-file versions: every distinct content of a site file the live twin ran with, numbered."""

from __future__ import annotations

import hashlib

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from ingest.store.models import SiteVersion


def record_site_version(engine: Engine, name: str, content: str, attempts: int = 3) -> SiteVersion:
    """The stored version of ``content``: the latest one if unchanged, else a new one numbered +1.

    Processes starting at once (the shards of one site) may race to number the same new
    version: the loser reads the winner's row and tries again.
    """
    for attempt in range(attempts):
        try:
            return _record(engine, name, content)
        except IntegrityError:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def _record(engine: Engine, name: str, content: str) -> SiteVersion:
    digest = hashlib.sha256(content.encode("utf-8")).hexdigest()
    with Session(engine) as session:
        latest = session.exec(
            select(SiteVersion).where(SiteVersion.name == name).order_by(SiteVersion.version.desc())
        ).first()
        if latest is not None and latest.content_sha256 == digest:
            return latest
        row = SiteVersion(
            name=name, version=(latest.version + 1) if latest else 1, content_sha256=digest, content=content
        )
        session.add(row)
        session.commit()
        session.refresh(row)
        return row


def site_version(engine: Engine, name: str, version: int) -> SiteVersion | None:
    """Version ``version`` of site ``name``, or None."""
    with Session(engine) as session:
        return session.exec(select(SiteVersion).where(SiteVersion.name == name, SiteVersion.version == version)).first()
