"""Secrets every web process of one database shares, generated once on first start.

The session signing key lives in the database (table ``app_secret``), so that several
``serve`` processes and web workers behind one address accept each other's session
cookies; ``$CLUSTERTWIN_SECRET_KEY`` overrides it.  It is never printed or exported.
"""

from __future__ import annotations

import os
import secrets

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from ingest.store.models import AppSecret

SESSION_KEY_NAME = "session_key"
SECRET_KEY_ENV = "CLUSTERTWIN_SECRET_KEY"
KEY_BYTES = 32


def session_key(engine: Engine) -> str:
    """The session signing key: ``$CLUSTERTWIN_SECRET_KEY``, else the stored one, else a new random one (stored)."""
    override = os.environ.get(SECRET_KEY_ENV)
    if override:
        return override
    with Session(engine) as session:
        stored = session.get(AppSecret, SESSION_KEY_NAME)
        if stored is not None:
            return stored.value
        session.add(AppSecret(name=SESSION_KEY_NAME, value=secrets.token_hex(KEY_BYTES)))
        try:
            session.commit()
        except IntegrityError:  # another process stored one at the same moment: use theirs
            session.rollback()
    with Session(engine) as session:
        return session.get(AppSecret, SESSION_KEY_NAME).value
