"""Where layouts and callbacks find the live hub of the app serving the request.

:func:`dashboard.app.create_app` stores the hub in the Flask config; callbacks run
inside a Flask request, so they read it back with :func:`current_hub`.  Keeping it in
the app (not in a module global) lets tests serve several apps in one process.
"""

from __future__ import annotations

import flask

HUB_CONFIG_KEY = "CLUSTERTWIN_HUB"


def current_hub():
    """The :class:`LiveHub`-like object of the app handling this request."""
    return flask.current_app.config[HUB_CONFIG_KEY]
