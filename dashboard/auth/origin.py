"""Requests from other websites: the ``Host`` a request names and the ``Origin`` of state-changing ones.

Checked on every request, with or without users (a ``before_request`` hook of
:mod:`dashboard.auth.setup`, before the login gate):

* **Host** (DNS rebinding): a page of ``attacker.example`` whose name the attacker re-points
  at 127.0.0.1 reaches a loopback server with ``Host: attacker.example``.  The names a
  request may give are the address ``serve`` is bound to, the loopback names when it is
  bound to loopback, and every ``--allowed-host`` (the names a reverse proxy forwards);
  anything else is 421.  A server bound to every address (``0.0.0.0``, ``::``) without
  ``--allowed-host`` cannot know its names and checks none (``serve`` logs that once).
* **Origin** (cross-site requests): a POST, PUT, PATCH or DELETE whose ``Origin`` — or, without
  one, ``Referer`` — names another host than the request's own is 403.  Browsers send
  ``Origin`` with every cross-origin POST; scripts (curl, Grafana) send neither and pass.
"""

from __future__ import annotations

import ipaddress
import logging
from urllib.parse import urlsplit

import flask

from dashboard.auth.binding import is_loopback, normalised_host

log = logging.getLogger(__name__)
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::"})
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def _name(host: str) -> str:
    """A host name or address as compared: lower case, no brackets, no trailing dot, IPv4-mapped unwrapped."""
    return normalised_host(host.strip().strip("[]").rstrip(".").lower())


def allowed_hosts(bind_host: str | None, extra: tuple[str, ...] = ()) -> frozenset[str] | None:
    """The names a request's ``Host`` may give (None: not checked, e.g. a test app or a wildcard bind)."""
    names = {_name(h) for h in extra if h.strip()}
    if bind_host is None:
        return frozenset(names) if names else None
    bound = _name(bind_host)
    if bound in WILDCARD_HOSTS:
        return frozenset(names | LOOPBACK_HOSTS) if names else None
    names.add(bound)
    if is_loopback(bound):
        names |= LOOPBACK_HOSTS
    return frozenset(names)


def request_host_name(host_header: str) -> str:
    """The host part of a ``Host`` header (``name:port``, ``[::1]:port``, ``name``)."""
    host = host_header.strip()
    if host.startswith("["):
        return _name(host[1 : host.find("]")] if "]" in host else host)
    if host.count(":") > 1:  # a bare IPv6 address, no port
        try:
            return _name(str(ipaddress.ip_address(host)))
        except ValueError:
            return _name(host)
    return _name(host.rsplit(":", 1)[0] if ":" in host else host)


def host_refusal(allowed: frozenset[str] | None) -> flask.Response | None:
    """421 for a request naming a host this server does not answer for (None when it may go on)."""
    if allowed is None:
        return None
    name = request_host_name(flask.request.host)
    if name in allowed:
        return None
    log.warning("refused a request for host %r (allowed: %s)", flask.request.host[:100], ", ".join(sorted(allowed)))
    response = flask.jsonify(
        error=f"host {flask.request.host[:100]!r} is not served here (see serve --allowed-host in docs/security.md)"
    )
    response.status_code = 421
    return response


def origin_refusal() -> flask.Response | None:
    """403 for a state-changing request that another site's page sent (None when it may go on)."""
    request = flask.request
    if request.method in SAFE_METHODS:
        return None
    origin, referer = request.headers.get("Origin"), request.headers.get("Referer")
    source = origin if origin is not None else referer
    if source is None:
        return None
    netloc = urlsplit(source).netloc.lower() if source != "null" else "null"
    if netloc == request.host.lower():
        return None
    log.warning(
        "refused a cross-site %s %s from %r (host %r)",
        request.method,
        request.path[:200],
        source[:100],
        request.host[:100],
    )
    response = flask.jsonify(error="cross-site request refused: its Origin or Referer is another site")
    response.status_code = 403
    return response
