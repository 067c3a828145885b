"""Security headers on every response, with a content security policy the offline assets allow.

Everything is served by the app itself, so every source is ``'self'``.  Dash's inline
scripts (the renderer start and clientside callbacks) are allowed by their hashes, not
by ``'unsafe-inline'``: each HTML page's policy lists the SHA-256 of the inline scripts of
that very page (:func:`inline_script_hashes`), so a clientside callback Dash adds late
(its pages router does on the first request) is covered too.  One allowance remains:
``'unsafe-inline'`` in ``style-src`` (plotly.js and Dash's components insert ``<style>``
elements and style attributes at run time; without it every page reports violations).
No ``'unsafe-eval'``: the vendored plotly.js draws WebGL (scattergl) traces without
``eval``.  The browser tests check that no page reports a CSP violation.

The referrer policy is ``same-origin``: over HTTPS the CSRF check compares a request's
``Referer`` with the host (the callbacks do not read it: they are given the view on screen,
:mod:`dashboard.views.context`), and no URL is ever sent to another site.
"""

from __future__ import annotations

import base64
import hashlib
import re

import flask

# An inline (no src) script element whose type is executable JavaScript.
_INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>(.*?)</script>", re.S)

STATIC_DIRECTIVES = {
    "default-src": "'self'",
    "style-src": "'self' 'unsafe-inline'",
    "img-src": "'self' data: blob:",
    "font-src": "'self' data:",
    "connect-src": "'self'",
    "worker-src": "'self' blob:",
    "object-src": "'none'",
    "base-uri": "'self'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}
SCRIPT_ALLOWANCES = ("'self'",)


def inline_script_hashes(html: str) -> list[str]:
    """CSP source expressions (``'sha256-…'``) of the inline scripts in ``html``, without repeats."""
    hashes = []
    for match in _INLINE_SCRIPT.finditer(html):
        digest = base64.b64encode(hashlib.sha256(match.group(1).encode()).digest()).decode()
        if f"'sha256-{digest}'" not in hashes:
            hashes.append(f"'sha256-{digest}'")
    return hashes


def content_security_policy(inline_script_hashes: list[str]) -> str:
    """The CSP header value, allowing the app's inline scripts by their hashes."""
    directives = dict(STATIC_DIRECTIVES, **{"script-src": " ".join((*SCRIPT_ALLOWANCES, *inline_script_hashes))})
    return "; ".join(f"{name} {value}" for name, value in directives.items())


def add_headers(response: flask.Response) -> flask.Response:
    """Set the security headers on ``response`` (an HTML page's CSP allows its own inline scripts)."""
    hashes = []
    if response.mimetype == "text/html" and not response.direct_passthrough:
        hashes = inline_script_hashes(response.get_data(as_text=True))
    for name, value in security_headers(content_security_policy(hashes)).items():
        response.headers.setdefault(name, value)
    return response


def security_headers(csp: str) -> dict[str, str]:
    """Every header set on every response."""
    return {
        "Content-Security-Policy": csp,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "same-origin",  # over HTTPS the CSRF check compares Referer with the host
        "X-Frame-Options": "DENY",  # for browsers that do not read frame-ancestors
        "Cross-Origin-Opener-Policy": "same-origin",
    }
