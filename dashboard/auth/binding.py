"""Which addresses ``serve`` may listen on: loopback freely, anything else only with users."""

from __future__ import annotations

import ipaddress
import logging

from twin.errors import InputError

log = logging.getLogger(__name__)
LOOPBACK_NAMES = ("localhost",)


class BindingError(InputError):
    """Serving on a non-loopback address without any user (and without the explicit opt-out)."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (127.0.0.0/8, ::1) or ``localhost``."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


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
