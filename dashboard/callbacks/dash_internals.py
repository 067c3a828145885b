"""Every use of Dash's private API, in one place (tests/dashboard/test_dash_internals.py guards it).

* Page modules register callbacks with ``dash.callback`` into module globals of
  ``dash._callback``; an app copies them on its first request.  Tests serve several apps
  in one process, so :func:`adopt_global_callbacks` hands them to one app at once.
* ``dcc.Location`` listens for the browser event ``_dashprivate_pushstate`` after a
  ``history.pushState``; :data:`PUSH_STATE_JS` is the one JavaScript function that
  navigates inside the app that way (``dcc.Link`` does the same internally).

If a Dash upgrade renames any of these, the test fails instead of the app misbehaving.
"""

from __future__ import annotations

import dash
from dash import _callback

PUSH_STATE_EVENT = "_dashprivate_pushstate"

# Navigate inside the app to ``href`` without a reload, as dcc.Link does.
PUSH_STATE_JS = (
    """function(href) {
    window.history.pushState({}, '', href);
    window.dispatchEvent(new CustomEvent('%s'));
}"""
    % PUSH_STATE_EVENT
)

GLOBAL_LISTS = ("GLOBAL_CALLBACK_MAP", "GLOBAL_CALLBACK_LIST", "GLOBAL_INLINE_SCRIPTS")
APP_LISTS = ("_callback_list", "_inline_scripts")


def clear_global_callbacks() -> None:
    """Forget the callbacks registered with ``dash.callback`` so far (before page modules re-register)."""
    _callback.GLOBAL_CALLBACK_MAP.clear()
    _callback.GLOBAL_CALLBACK_LIST.clear()
    _callback.GLOBAL_INLINE_SCRIPTS.clear()


def adopt_global_callbacks(app: dash.Dash) -> None:
    """Move the callbacks (and clientside inline scripts) registered with ``dash.callback`` into ``app``.

    Dash copies its global callback list into an app on the app's first request / index
    render, so a second app created before that would receive both apps' copies and the
    other none.  Creating an app re-executes every page module, which registers its
    callbacks afresh, so the lists are cleared before and handed to this app at once.
    """
    for key, value in _callback.GLOBAL_CALLBACK_MAP.items():
        app.callback_map[key] = value
    app._callback_list.extend(_callback.GLOBAL_CALLBACK_LIST)
    app._inline_scripts.extend(_callback.GLOBAL_INLINE_SCRIPTS)
    clear_global_callbacks()


def internals_problems(app: dash.Dash) -> list[str]:
    """What of the private API this module relies on is missing or changed (empty when all is there)."""
    problems = []
    expected = {"GLOBAL_CALLBACK_MAP": dict, "GLOBAL_CALLBACK_LIST": list, "GLOBAL_INLINE_SCRIPTS": list}
    for name, kind in expected.items():
        if not isinstance(getattr(_callback, name, None), kind):
            problems.append(f"dash._callback.{name} is not a {kind.__name__}")
    for name in APP_LISTS:
        if not isinstance(getattr(app, name, None), list):
            problems.append(f"Dash().{name} is not a list")
    if not isinstance(getattr(app, "callback_map", None), dict):
        problems.append("Dash().callback_map is not a dict")
    return problems
