"""One rendering per live tick, shared by every viewer: a cache of the interval-driven callback answers.

Fifty dashboards on one page send the same live-update requests every tick; only the
interval's ``n_intervals`` counter differs between them.  :func:`install` answers such a
request from a cache keyed by everything the answer depends on — the callback output, its
inputs and state (without the counter), the page URL the callbacks read the view from
(Referer), the caller's role and the current dashboard tick period (``tick_ms``, ≤ 2 s) —
so the callback runs once per period and key however many viewers ask.  Requests that arrive while the
first one is still rendering wait for it (up to :data:`WAIT_S`) instead of rendering too.

Only requests triggered by the interval alone are cached: a click, a selection or an
action always runs its callback, and any other POST (a callback a user triggered, an API
change) makes the earlier renderings unreachable, so an acknowledged alert never shows
unacknowledged again.  An entry lives one period at most, the time a viewer waits between
two updates anyway; the age of the data a page shows stays true to the period when the
twin stalls.  Checks that refuse a request (body validation, login, CSRF, roles) run before
this hook: it must be installed after them.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import flask

from dashboard import ids

CALLBACK_PATH = "/_dash-update-component"
TICK_PROP = f"{ids.Shell.TICK}.n_intervals"
MAX_ENTRIES = 512  # distinct (callback, state, view, role) of one second; more are rendered uncached
WAIT_S = 10.0  # a request waits this long for the same rendering in flight, then renders itself


@dataclass
class _Entry:
    body: bytes | None = None
    status: int = 0
    mimetype: str = "application/json"
    done: threading.Event | None = None


class TickCache:
    """Answers of interval-driven callbacks by key, with one rendering in flight per key."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0
        self.generation = 0  # part of every key: a change by anyone makes earlier renderings unreachable

    def changed(self) -> None:
        """Something may have changed what pages show (a click, an acknowledgement): render anew."""
        with self._lock:
            self.generation += 1

    def claim(self, key: str) -> _Entry | None:
        """The finished entry of ``key`` (waiting for one in flight), or None: the caller renders it."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self._entries[key] = _Entry(done=threading.Event())
                while len(self._entries) > self.max_entries:
                    self._entries.popitem(last=False)
                self.misses += 1
                return None
        if entry.done is not None and not entry.done.wait(WAIT_S):
            return None
        if entry.body is None:
            return None  # the rendering in flight failed or was not cacheable: render it here
        with self._lock:
            self.hits += 1
        return entry

    def finish(self, key: str, body: bytes | None, status: int = 200, mimetype: str = "application/json") -> None:
        """Store the rendering of ``key`` (``body`` None: nothing cacheable) and wake the waiting requests."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.done is None:
                return
            if body is None:
                del self._entries[key]
            else:
                entry.body, entry.status, entry.mimetype = body, status, mimetype
        entry.done.set()


def request_key(body: dict, role: str, period_s: float, generation: int = 0) -> str | None:
    """The cache key of a callback request, None when it is not driven by the interval alone."""
    if body.get("changedPropIds") != [TICK_PROP]:
        return None
    inputs = [i for i in body.get("inputs", []) if not (isinstance(i, dict) and i.get("id") == ids.Shell.TICK)]
    text = json.dumps([body.get("output"), inputs, body.get("state", []), flask.request.referrer or "", role,
                       int(time.time() / period_s), generation], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def install(server: flask.Flask, period_s: float, role_of_request: Callable[[], str] = lambda: "") -> TickCache:
    """Serve repeated live-update requests of ``server`` from one rendering per ``period_s`` (see module docstring)."""
    cache = TickCache()

    @server.before_request
    def _answer_from_cache():
        if flask.request.method != "POST":
            return None
        body = flask.request.get_json(silent=True) if flask.request.path == CALLBACK_PATH else None
        key = request_key(body, role_of_request(), period_s, cache.generation) if isinstance(body, dict) else None
        if key is None:
            cache.changed()  # any other POST (a click, an API change) may change what the pages show
            return None
        entry = cache.claim(key)
        if entry is None:
            flask.g.tick_cache_key = key
            return None
        return flask.Response(entry.body, status=entry.status, mimetype=entry.mimetype)

    @server.after_request
    def _remember(response: flask.Response):
        key = flask.g.pop("tick_cache_key", None)
        if key is not None:
            cacheable = response.status_code in (200, 204) and not response.direct_passthrough
            cache.finish(key, response.get_data() if cacheable else None, response.status_code, response.mimetype)
        return response

    @server.teardown_request
    def _release(_exc):
        key = flask.g.pop("tick_cache_key", None)
        if key is not None:  # the request failed before its answer: let the waiting ones render
            cache.finish(key, None)

    server.extensions["clustertwin_tick_cache"] = cache
    return cache
