"""A process's cached copy of the user table, refreshed every few seconds.

Every request asks whether any user exists and who the session's (or the API token's)
user is; reading the table at most every ``users_cache_s`` (2 s by default) keeps that off
the database while ``clustertwin users`` changes made by another process (a new token, a
removed user) take effect within that time.

Whether logins are required is decided once: from the first time the process sees a user
(at start, or when the first user is added while it runs) it requires logins for the rest
of its life.  Removing the last user never opens the server again: everything then
answers 401 until a user is added, and the process says so loudly; serving without
logins again takes a restart (which ``serve`` allows on loopback only).
"""

from __future__ import annotations

import logging
import threading
import time

from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from werkzeug.exceptions import ServiceUnavailable

from ingest.store.users import UserInfo, is_token_shaped, list_users, token_digest, token_owners

log = logging.getLogger(__name__)


class UserDirectory:
    """Users by id, as of at most ``ttl_s`` seconds ago (none at all without a database)."""

    def __init__(self, engine: Engine | None, ttl_s: float = 2.0, clock=time.monotonic):
        self.engine, self.ttl_s, self.clock = engine, ttl_s, clock
        self._by_id: dict[int, UserInfo] = {}
        self._by_token: dict[str, int] = {}
        self._read_at = -float("inf")
        self._loaded = False
        self._logins_required = False
        self._warned_empty = False
        self._lock = threading.Lock()

    def _fresh(self) -> dict[int, UserInfo]:
        with self._lock:
            if self.engine is not None and self.clock() - self._read_at >= self.ttl_s:
                try:
                    self._by_id = {u.id: u for u in list_users(self.engine)}
                    self._by_token = token_owners(self.engine)
                except SQLAlchemyError as exc:  # keep the last copy: a database blip must not open the doors
                    if not self._loaded:
                        raise ServiceUnavailable("the user table cannot be read; try again shortly") from None
                    log.warning(
                        "user table not readable, using the copy of %.0f s ago: %s",
                        self.clock() - self._read_at,
                        str(exc).splitlines()[0][:200],
                    )
                else:
                    self._read_at, self._loaded = self.clock(), True
                    self._note_users()
            return self._by_id

    def _note_users(self) -> None:
        if self._by_id:
            self._logins_required, self._warned_empty = True, False
        elif self._logins_required and not self._warned_empty:
            self._warned_empty = True
            log.critical(
                "the last user was removed: logins stay required (every request now gets 401); add a user "
                "with 'clustertwin users add NAME --role admin', or restart to serve without logins (loopback only)"
            )

    def any_users(self) -> bool:
        """Whether the user table (as of at most ``ttl_s`` ago) holds a user."""
        return bool(self._fresh())

    def logins_required(self) -> bool:
        """Whether requests need a login: once this process has seen a user, for the rest of its life."""
        self._fresh()
        return self._logins_required

    def get(self, user_id: int) -> UserInfo | None:
        return self._fresh().get(user_id)

    def by_token(self, token) -> UserInfo | None:
        """The user holding API token ``token`` (None for an unknown or malformed token)."""
        if not is_token_shaped(token):
            return None
        by_id = self._fresh()
        user_id = self._by_token.get(token_digest(token))
        return by_id.get(user_id) if user_id is not None else None

    def invalidate(self) -> None:
        """Re-read on the next question (after a change made by this process)."""
        with self._lock:
            self._read_at = -float("inf")
