"""One rendering per live tick, shared by every viewer: a cache of the interval-driven callback answers.

Fifty dashboards on one page send the same live-update requests every tick; only the
interval's ``n_intervals`` counter differs between them.  :func:`install` answers such a
request from a cache keyed by everything the answer depends on — the callback output, its
inputs and state (without the counter; the view on screen is among them: every callback
that reads the view is given the shell's screen store, see :mod:`dashboard.views.context`),
the caller's role and the current dashboard tick period (``tick_ms``, ≤ 2 s) — so the
callback runs once per period and key however many viewers ask.  Once a page has
been rendered, the first request of the next period is answered at once with the last
rendering while a copy of it, sent inside the process with the caller's headers (so it
passes the same checks), renders the new one in the background; requests arriving
meanwhile get the last rendering too.  No viewer waits for a rendering, and what a viewer
sees is at most two periods old.  The very first rendering of a page is waited for (up to
:data:`WAIT_S`) by the requests that arrive while it runs.

Only requests triggered by the interval alone are cached: a click, a selection or an
action always runs its callback, and any other POST (a callback a user triggered, an API
change) makes the earlier renderings unreachable, so an acknowledged alert never shows
unacknowledged again (nothing from before the change is served, not even while rendering).  Checks that refuse a request (body validation, login, CSRF, roles) run before
this hook: it must be installed after them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import flask

from dashboard import ids

log = logging.getLogger(__name__)

CALLBACK_PATH = "/_dash-update-component"
TICK_PROP = f"{ids.Shell.TICK}.n_intervals"
MAX_ENTRIES = 512  # distinct (callback, state, view, role) of one second; more are rendered uncached
WAIT_S = 10.0  # a request waits this long for the same rendering in flight, then renders itself
REFRESH_KEY_ENV, REFRESH_BASE_ENV = "clustertwin.tick_cache.key", "clustertwin.tick_cache.base"  # set only in-process


@dataclass
class _Entry:
    body: bytes | None = None
    status: int = 0
    mimetype: str = "application/json"
    done: threading.Event | None = None


HIT, STALE, REFRESH, RENDER = "hit", "stale", "refresh", "render"


class TickCache:
    """Answers of interval-driven callbacks by key, one rendering in flight per key, the last one kept per view."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._latest: OrderedDict[str, _Entry] = OrderedDict()  # base key (without the period) → last rendering
        self._lock = threading.Lock()
        self.hits = self.misses = self.stale = 0
        self.generation = 0  # part of every key: a change by anyone makes earlier renderings unreachable

    def changed(self) -> None:
        """Something may have changed what pages show (a click, an acknowledgement): render anew."""
        with self._lock:
            self.generation += 1

    def claim(self, key: str, base: str = "") -> tuple[str, _Entry | None]:
        """What to answer for ``key``: (HIT, entry), (STALE, last entry of ``base``) while the new one renders,
        (REFRESH, last entry) when the caller answers that and has the new one rendered in the background,
        or (RENDER, None): the caller renders it now."""
        with self._lock:
            entry = self._entries.get(key)
            latest = self._latest.get(base) if base else None
            if entry is None:
                self._entries[key] = _Entry(done=threading.Event())
                while len(self._entries) > self.max_entries:
                    self._entries.popitem(last=False)
                self.misses += 1
                return (REFRESH, latest) if latest is not None else (RENDER, None)
            if entry.body is None and latest is not None:
                self.stale += 1
                return STALE, latest
        if entry.done is not None and not entry.done.wait(WAIT_S):
            return RENDER, None
        if entry.body is None:
            return RENDER, None  # the rendering in flight failed or was not cacheable: render it here
        with self._lock:
            self.hits += 1
        return HIT, entry

    def finish(
        self, key: str, body: bytes | None, status: int = 200, mimetype: str = "application/json", base: str = ""
    ) -> None:
        """Store the rendering of ``key`` (``body`` None: nothing cacheable) and wake the waiting requests."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.done is None:
                return
            if body is None:
                del self._entries[key]
            else:
                entry.body, entry.status, entry.mimetype = body, status, mimetype
                if base:
                    self._latest[base] = entry
                    self._latest.move_to_end(base)
                    while len(self._latest) > self.max_entries:
                        self._latest.popitem(last=False)
        entry.done.set()


def request_keys(body: dict, role: str, period_s: float, generation: int = 0) -> tuple[str, str] | None:
    """(key, base key) of a callback request: the base leaves out the period; None when not driven by the interval alone."""
    if body.get("changedPropIds") != [TICK_PROP]:
        return None
    inputs = [i for i in body.get("inputs", []) if not (isinstance(i, dict) and i.get("id") == ids.Shell.TICK)]
    base = json.dumps(
        [body.get("output"), inputs, body.get("state", []), role, generation],
        sort_keys=True,
        default=str,
    )
    period = int(time.time() / period_s)
    return (hashlib.sha256(f"{base}@{period}".encode()).hexdigest(), hashlib.sha256(base.encode()).hexdigest())


def _refresh_in_background(server: flask.Flask, key: str, base: str) -> None:
    """Send this request again inside the process, to render ``key`` while the caller gets the last rendering.

    The copy carries the caller's headers (session cookie, token, CSRF header, Referer), its
    host and body, so it passes the same checks (the Host and Origin checks too) and renders
    what the caller would have seen.  A copy refused or failed is logged.
    """
    request = flask.request
    path = request.full_path if request.query_string else request.path
    data = request.get_data()
    headers = [(k, v) for k, v in request.headers.items() if k.lower() not in ("content-length", "host")]
    environ = {"REMOTE_ADDR": request.remote_addr or "127.0.0.1", REFRESH_KEY_ENV: key, REFRESH_BASE_ENV: base}
    base_url = f"{request.scheme}://{request.host}/"

    def run():
        try:
            answer = server.test_client().post(
                path, data=data, headers=headers, environ_base=environ, base_url=base_url
            )
            if answer.status_code not in (200, 204):
                log.warning("background rendering of a live update answered %d", answer.status_code)
        except Exception:  # noqa: BLE001 — the next viewer renders it instead; never kill the thread pool
            log.exception("background rendering of a live update failed")

    threading.Thread(target=run, name="tick-cache-refresh", daemon=True).start()


def install(server: flask.Flask, period_s: float, role_of_request: Callable[[], str] = lambda: "") -> TickCache:
    """Serve repeated live-update requests of ``server`` from one rendering per ``period_s`` (see module docstring)."""
    cache = TickCache()

    @server.before_request
    def _answer_from_cache():
        if flask.request.method != "POST":
            return None
        environ = flask.request.environ
        if REFRESH_KEY_ENV in environ:  # our own background rendering: render and store, nothing else
            flask.g.tick_cache_keys = (environ[REFRESH_KEY_ENV], environ[REFRESH_BASE_ENV])
            return None
        body = flask.request.get_json(silent=True) if flask.request.path == CALLBACK_PATH else None
        keys = request_keys(body, role_of_request(), period_s, cache.generation) if isinstance(body, dict) else None
        if keys is None:
            cache.changed()  # any other POST (a click, an API change) may change what the pages show
            return None
        action, entry = cache.claim(*keys)
        if action == RENDER:
            flask.g.tick_cache_keys = keys
            return None
        if action == REFRESH:
            _refresh_in_background(server, *keys)
        return flask.Response(entry.body, status=entry.status, mimetype=entry.mimetype)

    @server.after_request
    def _remember(response: flask.Response):
        keys = flask.g.pop("tick_cache_keys", None)
        if keys is not None:
            cacheable = response.status_code in (200, 204) and not response.direct_passthrough
            cache.finish(
                keys[0],
                response.get_data() if cacheable else None,
                response.status_code,
                response.mimetype,
                base=keys[1],
            )
        return response

    @server.teardown_request
    def _release(_exc):
        keys = flask.g.pop("tick_cache_keys", None)
        if keys is not None:  # the request failed before its answer: let the waiting ones render
            cache.finish(keys[0], None)

    server.extensions["clustertwin_tick_cache"] = cache
    return cache
