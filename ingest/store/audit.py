"""The audit log: who changed what, when, and the state before and after.

Entries are written by the dashboard (alert actions, scenario edits, user management
from the web), the API and the command line (``users``, ``incidents``); each holds its
before/after state as JSON text.  Secrets are never recorded: callers pass what changed,
and :func:`record` drops any key that names a password, token or secret.
"""

from __future__ import annotations

import getpass
import json
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from ingest.store.models import AuditEntry
from twin.errors import InputError

MAX_LIST = 1000
MAX_FIELD_CHARS = 4000  # before/after beyond this are cut (an entry stays small)
SECRET_WORDS = ("password", "token", "secret", "hash")


@dataclass(frozen=True)
class AuditFilter:
    """Which entries to list: by user, action prefix, time window; newest first, at most ``limit``."""

    user_name: str | None = None
    action: str | None = None  # exact action or prefix ending in "." (e.g. "alert.")
    since: datetime | None = None
    until: datetime | None = None
    limit: int = 200


def _scrub(value):
    if isinstance(value, dict):
        return {k: ("***" if any(w in str(k).lower() for w in SECRET_WORDS) else _scrub(v)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub(v) for v in value]
    return value


def _json(value) -> str:
    if value is None:
        return ""
    text = json.dumps(_scrub(value), default=str, sort_keys=True, allow_nan=False)
    return text if len(text) <= MAX_FIELD_CHARS else text[: MAX_FIELD_CHARS - 1] + "…"


def cli_user() -> str:
    """How a command-line change is attributed: ``cli:<operating-system user>``."""
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        return "cli:unknown"


def record(
    engine: Engine, user_name: str, action: str, target: str, before=None, after=None, address: str = ""
) -> None:
    """Append one entry (``before``/``after``: JSON-able values, secrets masked)."""
    entry = AuditEntry(
        user_name=user_name[:100],
        action=action[:100],
        target=str(target)[:300],
        before_json=_json(before),
        after_json=_json(after),
        address=address[:100],
    )
    with Session(engine) as session:
        session.add(entry)
        session.commit()


def entry_dict(entry: AuditEntry) -> dict:
    """An entry as plain values (``before``/``after`` parsed back from JSON)."""
    return {
        "id": entry.id,
        "at": entry.at,
        "user_name": entry.user_name,
        "action": entry.action,
        "target": entry.target,
        "before": json.loads(entry.before_json) if entry.before_json else None,
        "after": json.loads(entry.after_json) if entry.after_json else None,
        "address": entry.address,
    }


def list_entries(engine: Engine, where: AuditFilter = AuditFilter()) -> list[dict]:
    """Entries matching ``where``, newest first."""
    if not 1 <= where.limit <= MAX_LIST:
        raise InputError(f"audit limit {where.limit}: expected 1..{MAX_LIST}")
    query = select(AuditEntry)
    if where.user_name:
        query = query.where(AuditEntry.user_name == where.user_name)
    if where.action:
        query = query.where(
            col(AuditEntry.action).startswith(where.action)
            if where.action.endswith(".")
            else AuditEntry.action == where.action
        )
    if where.since:
        query = query.where(AuditEntry.at >= where.since)
    if where.until:
        query = query.where(AuditEntry.at < where.until)
    query = query.order_by(col(AuditEntry.at).desc(), col(AuditEntry.id).desc()).limit(where.limit)
    with Session(engine) as session:
        return [entry_dict(e) for e in session.exec(query).all()]
