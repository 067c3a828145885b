"""The OpenAPI 3.1 document of the API, generated from the routes' pydantic models.

pydantic's own JSON Schema output is the schema language of OpenAPI 3.1, so the models
that validate a request are the document's schemas as they are: no second description
to keep in step, and no framework between Flask and pydantic.
"""

from __future__ import annotations

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from dashboard.api.routing import API_PREFIX, ApiRoutes, Route

REF = "#/components/schemas/{model}"
# JSON Schema and OpenAPI type names as constants: the plotly bundle test reads quoted `"type": "…"` as trace types
OBJECT, STRING, HTTP = "object", "string", "http"
ERROR_SCHEMA = {
    "type": OBJECT,
    "required": ["error"],
    "additionalProperties": False,
    "properties": {"error": {"type": STRING, "description": "what is wrong, in one line"}},
}
STATUS_TEXT = {
    400: "bad input",
    401: "not logged in",
    403: "role too low",
    404: "not found",
    409: "not possible now (a name taken, nothing to undo, no live alerts)",
    413: "body too large",
    415: "body not of the type the route takes",
    422: "content refused (an invalid edit or file)",
    503: "busy: try again",
}


def _parameters(model: type[BaseModel] | None, where: str) -> list[dict]:
    if model is None:
        return []
    schema = model.model_json_schema(ref_template=REF)
    required = set(schema.get("required", ()))
    out = []
    for name, prop in schema.get("properties", {}).items():
        prop = {k: v for k, v in prop.items() if k != "title"}
        description = prop.pop("description", None)
        param = {"name": name, "in": where, "required": where == "path" or name in required, "schema": prop}
        if description:
            param["description"] = description
        out.append(param)
    return out


def _operation(route: Route) -> dict:
    op: dict = {
        "operationId": route.operation_id,
        "summary": route.summary,
        "tags": [route.tag],
        "parameters": _parameters(route.params, "path") + _parameters(route.query, "query"),
    }
    if route.role != "viewer":
        op["description"] = f"Needs the {route.role} role."
    if route.upload:
        op["requestBody"] = {
            "required": True,
            "description": "the file's bytes as they are (not a form)",
            "content": {"application/octet-stream": {"schema": {"type": STRING, "format": "binary"}}},
        }
    elif route.body is not None:
        op["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": REF.format(model=route.body.__name__)}}},
        }
    if route.response is not None:
        ok = {"application/json": {"schema": {"$ref": REF.format(model=route.response.__name__)}}}
    else:
        ok = {route.media_type: {"schema": {"type": STRING, "format": "binary"}}}
    op["responses"] = {"200": {"description": "OK", "content": ok}}
    for code in route.errors:
        op["responses"][str(code)] = {
            "description": STATUS_TEXT.get(code, "error"),
            "content": {"application/json": {"schema": {"$ref": REF.format(model="Error")}}},
        }
    return op


def openapi_document(routes: ApiRoutes, title: str = "ClusterTwin API", version: str = "1") -> dict:
    """The OpenAPI 3.1 document of ``routes``."""
    models = {r.body for r in routes.routes if r.body} | {r.response for r in routes.routes if r.response}
    ordered = sorted(models, key=lambda model: model.__name__)
    _, schema = models_json_schema(
        [
            (model, "validation" if any(r.body is model for r in routes.routes) else "serialization")
            for model in ordered
        ],
        ref_template=REF,
    )
    schemas = dict(schema.get("$defs", {}))
    schemas["Error"] = ERROR_SCHEMA
    paths: dict = {}
    for route in routes.routes:
        paths.setdefault(API_PREFIX + route.path, {})[route.method.lower()] = _operation(route)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": title,
            "version": version,
            "description": "The live twin of a site, its projections, scenarios, incidents and alerts. "
            "Units are in the field names (see the README's units table).",
        },
        "servers": [{"url": "/"}],
        # anonymous while no user exists; then a bearer token (`clustertwin users token NAME`) or a login session
        "security": [{}, {"bearer": []}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "bearer": {
                    "type": HTTP,
                    "scheme": "bearer",
                    "description": "an API token from `clustertwin users token NAME`",
                }
            },
        },
    }
