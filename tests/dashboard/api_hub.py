"""A demo live hub with a viewer and an operator, and their API tokens: the base of the API tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ingest.store.users import add_user, new_token

T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)
USERS = {"vera": ("viewer", "viewer-password-1"), "otto": ("operator", "operator-password-1")}


def demo_hub_with_users(folder, ticks: int, faults: tuple[str, ...] = ()):
    """The demo site's hub on an SQLite file in ``folder``, stepped ``ticks`` seconds from T0, with USERS added."""
    from ingest.live.runtime import build_hub

    hub = build_hub("demo", f"sqlite:///{folder / 'live.db'}", start=T0, faults=faults)
    for i in range(ticks):
        hub.step(T0 + timedelta(seconds=i))
    for name, (role, password) in USERS.items():
        add_user(hub.db, name, role, password)
    return hub


def bearer_headers(hub) -> dict[str, dict]:
    """A fresh API token per user in USERS, as request headers."""
    return {name: {"Authorization": f"Bearer {new_token(hub.db, name)}"} for name in USERS}
