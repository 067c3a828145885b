"""Who is making a request: a :class:`Principal` with a name and a role."""

from __future__ import annotations

from dataclasses import dataclass

import flask_login

from ingest.store.users import ROLE_RANK, ROLES, UserInfo

LOCAL_NAME = "local"  # no users exist: whoever reaches the loopback address


@dataclass(frozen=True)
class Principal:
    """A user acting through the dashboard or the API.

    ``via`` is ``session`` (logged in with a password), ``token`` (an API token in the
    ``Authorization: Bearer`` header) or ``local`` (no users exist: every request is allowed,
    which ``serve`` only permits on a loopback address).
    """

    name: str
    role: str
    via: str

    def has_role(self, role: str) -> bool:
        """Whether this principal's role is ``role`` or above (viewer < operator < admin)."""
        if role not in ROLE_RANK:
            raise ValueError(f"unknown role {role!r}; roles: {', '.join(ROLES)}")
        return ROLE_RANK[self.role] >= ROLE_RANK[role]


LOCAL = Principal(LOCAL_NAME, "admin", "local")


class SessionUser(flask_login.UserMixin):
    """Flask-Login's view of a user.  The session keeps ``"<id>:<epoch>"``: a password or
    role change moves the epoch on, which ends the user's other sessions."""

    def __init__(self, info: UserInfo, via: str = "session"):
        self.info, self.via = info, via

    def get_id(self) -> str:
        return f"{self.info.id}:{self.info.session_epoch}"

    @property
    def principal(self) -> Principal:
        return Principal(self.info.name, self.info.role, self.via)
