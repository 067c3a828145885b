"""Which addresses ``serve`` may listen on: loopback freely, anything else only with users."""

from __future__ import annotations

import ipaddress
import logging

from twin.errors import InputError

log = logging.getLogger(__name__)
LOOPBACK_NAMES = ("localhost",)


class BindingError(InputError):
    """Serving on a non-loopback address without any user (and without the explicit opt-out)."""


def normalised_host(host: str) -> str:
    """``host`` with an IPv4-mapped IPv6 address (``::ffff:127.0.0.1``) written as its IPv4 address."""
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return host
    mapped = getattr(address, "ipv4_mapped", None)
    return str(mapped) if mapped is not None else host


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (127.0.0.0/8, ::1, also IPv4-mapped: ::ffff:127.0.0.1) or ``localhost``."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def check_binding(host: str, user_count: int, insecure_no_auth: bool) -> None:
    """Refuse a non-loopback ``host`` when nobody has to log in; log the opt-out loudly."""
    if is_loopback(host) or user_count > 0:
        return
    if insecure_no_auth:
        for _ in range(3):
            log.critical(
                "--insecure-no-auth: serving on %s WITHOUT ANY LOGIN: anyone who reaches this address can "
                "acknowledge and silence alerts and change scenarios",
                host,
            )
        return
    raise BindingError(
        f"--host {host}: serving beyond this machine needs a login, and no user exists; add one with "
        "'clustertwin users add NAME --role admin' (or pass --insecure-no-auth to accept the risk)"
    )
