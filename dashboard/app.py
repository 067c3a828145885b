"""The Dash app factory: ``create_app(view, actions)`` wires the shell, the pages and the live twin together.

Pages live one per file in ``dashboard/pages`` (Dash pages, ``layout(**kwargs)`` and
their callbacks beside them); the shell is :mod:`dashboard.shell.frame`.  Everything is served
from this process: Dash's own bundles with ``serve_locally`` and our CSS from the
top-level ``assets/`` folder — no CDN, no external fonts.  ``assets/`` also holds a
vendored plotly.js bundle with only the trace types the app draws (its header says how
to rebuild it); dcc.Graph uses that ``window.Plotly`` instead of fetching Dash's full
plotly.min.js, which roughly halves the first render with an empty browser cache.
"""

from __future__ import annotations

import logging
from pathlib import Path

import dash
import flask
from werkzeug.exceptions import HTTPException

from dashboard.api import register_api
from dashboard.api.metrics import register_metrics
from dashboard.auth import AuthSettings, current_user, init_auth
from dashboard.auth.account import account_block
from dashboard.callbacks.dash_internals import adopt_global_callbacks, clear_global_callbacks
from dashboard.callbacks.inputs import InputError
from dashboard.present.theme import register_template
from dashboard.shell import frame as shell
from dashboard.views import compare, tick_cache
from dashboard.views.context import ALERT_ACTIONS_KEY, LIVE_VIEW_KEY, SITE_DB_KEY

log = logging.getLogger(__name__)

PACKAGE_DIR = Path(__file__).resolve().parent
PAGES_DIR = PACKAGE_DIR / "pages"
ASSETS_DIR = PACKAGE_DIR.parent / "assets"
# The largest callback body the pages send is the alerts page with 500 alert buttons
# (about 0.22 MB, see tests/dashboard/test_app_limits.py); 2 MiB leaves room and bounds
# what a burst of oversized POSTs can cost (they are refused before being read).
MAX_REQUEST_BYTES = 2 * 1024 * 1024
CALLBACK_PATH = "/_dash-update-component"


def create_app(
    view,
    actions=None,
    *,
    site_db=None,
    tick_ms: int = shell.TICK_MS,
    db=None,
    auth: AuthSettings | None = None,
) -> dash.Dash:
    """A Dash app showing the live ``view`` (a :class:`twin.engine.view.View`: the live hub's
    :attr:`~ingest.live.hub.LiveHub.view`, or a stand-in).

    ``actions`` acknowledge, silence and unsilence alerts (the hub's
    :attr:`~ingest.live.hub.LiveHub.alert_actions`; None: alerts are read-only).  ``site_db``
    is the site's database (scenarios of the what-if editor, incidents, calibrations; None:
    kept in memory).  ``tick_ms`` is the live-update period (≤ 2000 ms).  ``db`` is the
    engine holding users and the audit log (default: ``site_db``; without either there are
    no users, hence no login); ``auth`` the login settings (:mod:`dashboard.auth`).
    """
    register_template()
    clear_global_callbacks()  # the page modules register theirs afresh when Dash imports them
    app = dash.Dash(
        "dashboard",
        use_pages=True,
        pages_folder=str(PAGES_DIR),
        assets_folder=str(ASSETS_DIR),
        serve_locally=True,
        title="ClusterTwin",
        update_title=None,
        suppress_callback_exceptions=True,
    )
    app.server.config.update({LIVE_VIEW_KEY: view, ALERT_ACTIONS_KEY: actions, SITE_DB_KEY: site_db})
    adopt_global_callbacks(app)
    shell.register_callbacks(app)
    compare.register_callbacks(app)
    init_auth(app, db if db is not None else site_db, view.site_name, auth)
    _guard_requests(app)
    register_api(app.server)
    register_metrics(app.server, view)
    # after every check that may refuse a callback request; viewers share renderings per role
    tick_cache.install(app.server, tick_ms / 1000.0, role_of_request=_role_of_request)
    app.layout = lambda: shell.layout(view.site_name, tick_ms, account=account_block())
    log.info("dashboard app created for site %s with %d pages", view.site_name, len(dash.page_registry))
    return app


def app_for_hub(hub, **kwargs) -> dash.Dash:
    """The app of a live hub (:class:`ingest.live.hub.LiveHub`): its view, its alert actions, its database.

    ``kwargs`` as for :func:`create_app` (``tick_ms``, ``db``, ``auth``).
    """
    return create_app(hub.view, hub.alert_actions, site_db=hub.db, **kwargs)


def _role_of_request() -> str:
    user = current_user()
    return user.role if user is not None else "anonymous"


def _callback_body_problem(app: dash.Dash, body) -> str | None:
    """What is structurally wrong with a callback request body (None when it looks like Dash's)."""
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    output = body.get("output")
    if not isinstance(output, str) or output not in app.callback_map:
        return "unknown callback output"
    for key in ("inputs", "state"):
        items = body.get(key, [])
        if not isinstance(items, list) or not all(isinstance(i, (dict, list)) for i in items):
            return f"'{key}' must be a list of component properties"
    if not isinstance(body.get("changedPropIds", []), list):
        return "'changedPropIds' must be a list"
    return None


def _guard_requests(app: dash.Dash) -> None:
    """Bound request bodies and answer bad callback requests with a 4xx and one log line.

    Every legitimate callback input comes from a page's own widgets, so a callback that
    fails on its input was sent something the UI never sends: it gets HTTP 400 with the
    reason, logged as one warning line (the traceback only at debug level).  Pages
    validate the inputs a user can get wrong (:mod:`dashboard.callbacks.inputs`) and show a message
    instead.  Errors outside callbacks keep Flask's usual 500 with a traceback.
    """
    server = app.server
    server.config["MAX_CONTENT_LENGTH"] = MAX_REQUEST_BYTES

    @server.before_request
    def _check_callback_body():
        if flask.request.path != CALLBACK_PATH or flask.request.method != "POST":
            return None
        try:
            body = flask.request.get_json(silent=True)
        except RecursionError:
            body, problem = None, "the JSON is nested too deeply"
        else:
            problem = _callback_body_problem(app, body)
        if problem is None:
            flask.g.callback_output = body["output"]
            return None
        log.warning("refused callback request from %s: %s", flask.request.remote_addr, problem)
        return flask.jsonify(error=f"bad callback request: {problem}"), 400

    @server.errorhandler(Exception)
    def _callback_error(error: Exception):
        if isinstance(error, HTTPException):
            return error
        if flask.request.path != CALLBACK_PATH:
            raise error
        output = flask.g.get("callback_output", "?")
        if isinstance(error, InputError):
            log.warning("callback %s: bad input: %s", str(output)[:120], error)
            return flask.jsonify(error=str(error)), 400
        log.warning("callback %s refused its input: %s: %s", str(output)[:120], type(error).__name__, str(error)[:200])
        log.debug("callback failure", exc_info=error)
        return flask.jsonify(error=f"invalid callback input ({type(error).__name__})"), 400
