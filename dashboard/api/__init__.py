"""The JSON API under ``/api/v1`` and its OpenAPI document (``/api/v1/openapi.json``).

:func:`register_api` mounts it on the Dash app's Flask server.  Routes live one module per
subject (``live``, ``alerts``, ``scenarios``, ``whatif``, ``incidents``); :mod:`dashboard.api.routing`
validates and answers, :mod:`dashboard.api.openapi` describes them.  See docs/api.md.
"""

from __future__ import annotations

import flask
from werkzeug.exceptions import HTTPException

from dashboard.api import access, alerts, incidents, live, scenarios, whatif  # noqa: F401 — they declare the routes
from dashboard.api.openapi import openapi_document
from dashboard.api.routing import API_PREFIX, api, error_response
from dashboard.api.uploads import allow_upload_size


def register_api(server: flask.Flask) -> None:
    """Serve the API on ``server``; errors under the API's prefix are answered as JSON."""
    api.authorize = access.authorize
    document = openapi_document(api)
    blueprint = api.blueprint()
    blueprint.add_url_rule("/openapi.json", "openapi", lambda: flask.jsonify(document))
    blueprint.add_url_rule(
        "/<path:unknown>",
        "unknown",
        lambda unknown: error_response(404, "no such API route"),
        methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
    )
    server.register_blueprint(blueprint)
    uploads = {f"{blueprint.name}.{route.operation_id}" for route in api.routes if route.upload}

    def _upload_size():
        if flask.request.endpoint in uploads:
            allow_upload_size()

    # first of all before-request functions: the access layer's CSRF check may read the body
    server.before_request_funcs.setdefault(None, []).insert(0, _upload_size)

    @server.errorhandler(HTTPException)
    def _http_error(error: HTTPException):
        if not flask.request.path.startswith(API_PREFIX + "/") and flask.request.path != API_PREFIX:
            return error
        return error_response(error.code or 400, error.description or error.name)
