"""Where layouts and callbacks find the live twin, and the view on screen, of the request's app.

:func:`dashboard.app.create_app` stores what the dashboard is given of the live twin in
the Flask config: the read-only live view (:func:`live_view`, a
:class:`twin.engine.view.View`), the operator's alert actions (:func:`alert_actions`:
acknowledge, silence, unsilence; None when alerts are read-only) and the site's database
(:func:`site_db`, None without one).  Callbacks run inside a Flask request, so they read
them back from there.  Keeping them in the app (not in module globals) lets tests serve
several apps in one process.

The view on screen is named in the page URL (``?view=scenario:…&compare=live&diff=1``,
see :mod:`dashboard.views.registry`), and only there.  A page's ``layout(**kwargs)``
receives those query parameters (:func:`parse_selection`).  Callbacks are told explicitly:
the shell keeps the page's path and view parameters in a store (``ids.Shell.SCREEN``, set
from the URL by a clientside callback on the shell's ``dcc.Location``; the replay page
writes it too when it moves the instant in the URL), and every callback that reads the
view takes that store as a ``State`` or ``Input`` (:func:`selection_of`, :func:`path_of`).
Deep-link writers keep the view parameters in the URL (:mod:`dashboard.shell.deep_link`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeGuard
from urllib.parse import parse_qs, urlsplit

import flask

LIVE_VIEW_KEY = "CLUSTERTWIN_LIVE_VIEW"
ALERT_ACTIONS_KEY = "CLUSTERTWIN_ALERT_ACTIONS"
SITE_DB_KEY = "CLUSTERTWIN_SITE_DB"
VIEW_PARAMS = ("view", "compare", "diff")  # the query parameters that choose what is on screen
SCREEN_FIELDS = ("path", *VIEW_PARAMS)  # what the shell's screen store holds (strings or null)


@dataclass(frozen=True)
class ViewSelection:
    """The view keys of the page URL: ``view`` (default live), ``compare`` (or None), ``diff``."""

    view: str = "live"
    compare: str | None = None
    diff: bool = False

    def params(self) -> dict[str, str]:
        """The query parameters of this selection (live and no comparison: none)."""
        out = {}
        if self.view and self.view != "live":
            out["view"] = self.view
        if self.compare:
            out["compare"] = self.compare
            if self.diff:
                out["diff"] = "1"
        return out


def live_view():
    """The live view (:class:`twin.engine.view.View`) of the app handling this request."""
    return flask.current_app.config[LIVE_VIEW_KEY]


def alert_actions():
    """The alert actions of the app handling this request (None: its alerts are read-only)."""
    return flask.current_app.config.get(ALERT_ACTIONS_KEY)


def site_db():
    """The site's database engine of the app handling this request (None without one)."""
    return flask.current_app.config.get(SITE_DB_KEY)


def parse_selection(params: dict) -> ViewSelection:
    """The selection from query parameters (values may be lists, as ``parse_qs`` gives)."""

    def one(name):
        value = params.get(name)
        if isinstance(value, (list, tuple)):
            value = value[0] if value else None
        return value.strip() if isinstance(value, str) and value.strip() else None

    return ViewSelection(
        view=one("view") or "live", compare=one("compare"), diff=(one("diff") or "").lower() in ("1", "true", "yes")
    )


def selection_from_url(url: str | None) -> ViewSelection:
    """The selection of a page URL (or a bare ``?query``)."""
    return parse_selection(parse_qs(urlsplit(url or "").query))


def screen_data(url: str) -> dict:
    """What the shell's screen store holds for the page ``url`` (the server-side twin of its clientside setter)."""
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    shown: dict[str, str | None] = {"path": parts.path or "/"}
    for name in VIEW_PARAMS:
        values = query.get(name)
        shown[name] = values[0] if values else None
    return shown


def is_screen_data(shown) -> TypeGuard[dict]:
    """Whether ``shown`` looks like the screen store's data (a dict of the fields, strings or null)."""
    return isinstance(shown, dict) and all(isinstance(shown.get(k), (str, type(None))) for k in SCREEN_FIELDS)


def selection_of(shown: dict | None) -> ViewSelection:
    """The view selection the shell's screen store names (``shown``: its data)."""
    return parse_selection(shown if is_screen_data(shown) else {})


def path_of(shown: dict | None) -> str | None:
    """The page path the screen store names, without a trailing slash (``/`` for the root); None when unset."""
    path = shown.get("path") if is_screen_data(shown) else None
    return None if path is None else "/" + path.strip("/")
