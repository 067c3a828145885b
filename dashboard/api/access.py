"""Who may call an API route: the one place the API asks the dashboard's access control.

Roles rank viewer < operator < admin.  Until users and logins exist every caller is
let in (the server then binds to 127.0.0.1 only); :func:`authorize` is where the API
defers to the dashboard's authentication once it does.
"""

from __future__ import annotations

ROLES = ("viewer", "operator", "admin")


def authorize(role: str) -> None:
    """Let the request through when its caller holds ``role`` or a higher one; raise ApiError otherwise."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}")


def current_user_name() -> str:
    """Name of the caller, recorded with what they change ('' when anonymous)."""
    return ""
