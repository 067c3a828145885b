"""Where layouts and callbacks find the live twin, and the view on screen, of the request's app.

:func:`dashboard.app.create_app` stores what the dashboard is given of the live twin in
the Flask config: the read-only live view (:func:`live_view`, a
:class:`twin.engine.view.View`), the operator's alert actions (:func:`alert_actions`:
acknowledge, silence, unsilence; None when alerts are read-only) and the site's database
(:func:`site_db`, None without one).  Callbacks run inside a Flask request, so they read
them back from there.  Keeping them in the app (not in module globals) lets tests serve
several apps in one process.

The view on screen is named in the page URL (``?view=scenario:…&compare=live&diff=1``,
see :mod:`dashboard.views.registry`).  A page's ``layout(**kwargs)`` receives those query
parameters; its callbacks are requests sent by that page, whose ``Referer`` is the
page URL, so :func:`selection` reads the same parameters there — one mechanism for
every callback, with no extra inputs.  Deep-link writers keep the view parameters in the
URL (:mod:`dashboard.shell.deep_link`).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import flask

LIVE_VIEW_KEY = "CLUSTERTWIN_LIVE_VIEW"
ALERT_ACTIONS_KEY = "CLUSTERTWIN_ALERT_ACTIONS"
SITE_DB_KEY = "CLUSTERTWIN_SITE_DB"
VIEW_PARAMS = ("view", "compare", "diff")  # the query parameters that choose what is on screen


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


def selection(**layout_kwargs) -> ViewSelection:
    """The selection on screen: from a layout's query kwargs when given, else the page URL of the request."""
    if any(name in layout_kwargs for name in VIEW_PARAMS):
        return parse_selection(layout_kwargs)
    if flask.has_request_context():
        return selection_from_url(flask.request.referrer)
    return ViewSelection()
