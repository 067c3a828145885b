"""The API's route table: each route declares its models once, for validation and the OpenAPI document.

:class:`ApiRoutes` collects the routes of ``/api/v1``.  A route names its method, path,
role, and the pydantic models of its path parameters, query, body and response;
:meth:`ApiRoutes.endpoint` wraps the handler so that every input is validated by those
models (a bad one is HTTP 400 with ``{"error": "one line"}``), and
:mod:`dashboard.api.openapi` builds the OpenAPI 3 document from the very same models, so
the document cannot drift from what the server accepts and returns.

Only errors raised on purpose become JSON answers with a 4xx status: :class:`ApiError`
(its status; :class:`NotFound` is 404), :class:`Unprocessable` (422: well-formed, but the
content cannot be accepted) and the projects' ``InputError`` (400: a bad value the model
refused).  Anything else, a ``KeyError`` or ``ValueError`` from a bug included, is logged
with its traceback and answered 500 with a one-line JSON body.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass

import flask
from pydantic import BaseModel, ValidationError

from dashboard.callbacks.inputs import InputError as WebInputError
from twin.commands.jsonout import finite_or_null
from twin.errors import InputError, one_line

log = logging.getLogger(__name__)

API_PREFIX = "/api/v1"
MAX_BODY_BYTES = 1024 * 1024  # the largest JSON body (a scenario) is a few kB; file uploads have their own cap
MAX_ERROR_CHARS = 300


class ApiError(Exception):
    """An answer other than 200: ``status`` and a one-line message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class NotFound(ApiError):
    """The path names nothing that exists (HTTP 404)."""

    def __init__(self, message: str) -> None:
        super().__init__(404, message)


class Unprocessable(ValueError):
    """A well-formed request whose content is refused (HTTP 422): an invalid edit, a damaged file."""


@dataclass(frozen=True)
class Route:
    """One API route: what it accepts and returns, and who may call it."""

    method: str
    path: str  # OpenAPI style, relative to API_PREFIX: /alerts/{alert_id}
    summary: str
    role: str
    handler: Callable
    tag: str
    response: type[BaseModel] | None = None
    params: type[BaseModel] | None = None  # path parameters
    query: type[BaseModel] | None = None
    body: type[BaseModel] | None = None
    media_type: str = "application/json"  # of the 200 answer (a file download is not JSON)
    errors: tuple[int, ...] = (400,)
    upload: bool = False  # the body is a file's bytes (dashboard.api.uploads), not JSON

    @property
    def flask_path(self) -> str:
        return re.sub(r"{(\w+)}", r"<\1>", self.path)

    @property
    def operation_id(self) -> str:
        return self.handler.__name__


def error_response(status: int, message: str) -> flask.Response:
    """``{"error": message}`` (one line, bounded) with ``status``."""
    text = one_line(str(message))[:MAX_ERROR_CHARS]
    response = flask.jsonify(error=text)
    response.status_code = status
    return response


def json_response(model: BaseModel) -> flask.Response:
    """A model as strict JSON (non-finite numbers are null)."""
    body = json.dumps(finite_or_null(model.model_dump(mode="json")), allow_nan=False)
    return flask.Response(body, mimetype="application/json")


def validation_message(exc: ValidationError, where: str) -> str:
    """The first problem of a pydantic error, naming the field: ``query.limit: ...``."""
    first = exc.errors(include_url=False)[0]
    location = ".".join(str(part) for part in first.get("loc", ()))
    return f"{where}{'.' + location if location else ''}: {first.get('msg', 'invalid')}"


def _parse(model: type[BaseModel] | None, data, where: str):
    if model is None:
        return None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ApiError(400, validation_message(exc, where)) from None


def _query_dict(model: type[BaseModel] | None) -> dict:
    args = flask.request.args
    repeated = [key for key in args if len(args.getlist(key)) > 1]
    if repeated:
        raise ApiError(400, f"query.{repeated[0][:50]}: given more than once")
    if model is not None:
        unknown = [key for key in args if key not in model.model_fields]
        if unknown:
            raise ApiError(
                400, f"query.{unknown[0][:50]}: unknown parameter (known: {', '.join(model.model_fields) or 'none'})"
            )
    elif args:
        raise ApiError(400, "this route takes no query parameters")
    return args.to_dict()


def _body_json(model: type[BaseModel] | None):
    if model is None:
        return None
    length = flask.request.content_length
    if length is not None and length > MAX_BODY_BYTES:
        raise ApiError(413, f"body of {length} bytes is larger than {MAX_BODY_BYTES} bytes")
    data = flask.request.get_data(cache=True)
    if len(data) > MAX_BODY_BYTES:
        raise ApiError(413, f"body is larger than {MAX_BODY_BYTES} bytes")
    if not data:
        return {}
    mimetype = flask.request.mimetype
    if mimetype != "application/json":
        raise ApiError(415, f"body must be application/json, not {mimetype[:60] or 'untyped'}")
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        raise ApiError(400, "body is not valid JSON") from None


class ApiRoutes:
    """The route table of the API (see module docstring)."""

    def __init__(self) -> None:
        self.routes: list[Route] = []
        # the refusal of a request for lack of a role, or None (set to dashboard.api.access.authorize)
        self.authorize: Callable[[str], flask.Response | None] = lambda role: None

    def route(
        self,
        method: str,
        path: str,
        *,
        summary: str,
        role: str = "viewer",
        tag: str,
        response: type[BaseModel] | None = None,
        params: type[BaseModel] | None = None,
        query: type[BaseModel] | None = None,
        body: type[BaseModel] | None = None,
        media_type: str = "application/json",
        errors: tuple[int, ...] = (),
        upload: bool = False,
    ) -> Callable:
        """Declare a route; the handler gets ``params``, ``query``, ``body`` models as keywords.

        ``upload``: the body is a file the handler reads with :func:`dashboard.api.uploads.received_upload`
        (its own size cap instead of the JSON bodies' :data:`MAX_BODY_BYTES`).
        """

        def declare(handler: Callable) -> Callable:
            codes = {400, 401, *errors}  # 401: once users exist, every route needs a login or a token
            if body is not None or upload:
                codes |= {413, 415}
            if role != "viewer":
                codes |= {403}
            self.routes.append(
                Route(
                    method.upper(),
                    path,
                    summary,
                    role,
                    handler,
                    tag,
                    response,
                    params,
                    query,
                    body,
                    media_type,
                    tuple(sorted(codes)),
                    upload,
                )
            )
            return handler

        return declare

    def endpoint(self, route: Route) -> Callable:
        """The Flask view function of ``route``: access, validation, the handler, errors as JSON."""

        @functools.wraps(route.handler)
        def view(**path_values):
            refusal = self.authorize(route.role)
            if refusal is not None:
                return refusal
            try:
                kwargs = {}
                if route.params is not None:
                    kwargs["params"] = _parse(route.params, path_values, "path")
                if route.query is not None or flask.request.args:
                    kwargs["query"] = _parse(route.query, _query_dict(route.query), "query")
                if route.body is not None:
                    kwargs["body"] = _parse(route.body, _body_json(route.body), "body")
                kwargs = {k: v for k, v in kwargs.items() if v is not None}
                result = route.handler(**kwargs)
            except ApiError as exc:
                return error_response(exc.status, str(exc))
            except ValidationError:  # an answer that does not fit its own model: a bug
                log.exception("API %s %s built an invalid answer", route.method, route.path)
                return error_response(500, "internal error (invalid answer)")
            except Unprocessable as exc:
                return error_response(422, str(exc))
            except (InputError, WebInputError) as exc:  # a value the twin's or the page's checks refused
                return error_response(400, str(exc))
            except Exception as exc:  # noqa: BLE001 — a bug: logged in full, answered in one line
                log.exception("API %s %s failed", route.method, route.path)
                return error_response(500, f"internal error ({type(exc).__name__})")
            if isinstance(result, flask.Response):
                return result
            return json_response(result)

        return view

    def blueprint(self) -> flask.Blueprint:
        """A Flask blueprint serving every declared route under :data:`API_PREFIX`."""
        bp = flask.Blueprint("api_v1", __name__, url_prefix=API_PREFIX)
        for route in self.routes:
            bp.add_url_rule(
                route.flask_path, endpoint=route.operation_id, view_func=self.endpoint(route), methods=[route.method]
            )
        return bp


api = ApiRoutes()
