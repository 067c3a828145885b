"""Settings of the access layer, with their defaults (``serve`` flags override them)."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_SESSION_IDLE_S = 12 * 3600.0


@dataclass(frozen=True)
class AuthSettings:
    """How logins behave.

    ``session_idle_s``: a session unused this long ends (the next request must log in again).
    ``secure_cookies``: mark cookies ``Secure`` (set when the dashboard is reached over HTTPS).
    ``login_failures_per_address`` / ``login_failures_per_user`` (per user name *from one
    address*) within ``login_window_s``: further attempts are refused with HTTP 429 until the
    window has passed.
    ``trusted_proxies``: how many reverse proxies in front of the server to trust: the client
    address and scheme are taken from that many hops of ``X-Forwarded-For`` and
    ``X-Forwarded-Proto`` (werkzeug's ProxyFix); 0 ignores those headers (a client could forge them).
    ``users_cache_s``: how long a process trusts its copy of the user table (user changes made
    by ``clustertwin users`` take effect within this time).
    ``bind_host``: the address ``serve`` listens on (None: not served by ``serve``, e.g. a test
    app); with ``allowed_hosts`` (``--allowed-host``) it decides which ``Host`` headers are
    answered (:mod:`dashboard.auth.origin`).
    """

    session_idle_s: float = DEFAULT_SESSION_IDLE_S
    secure_cookies: bool = False
    login_failures_per_address: int = 20
    login_failures_per_user: int = 5
    login_window_s: float = 300.0
    users_cache_s: float = 2.0
    trusted_proxies: int = 0
    bind_host: str | None = None
    allowed_hosts: tuple[str, ...] = ()
