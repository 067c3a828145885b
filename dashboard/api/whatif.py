"""API routes of the what-if editor's scenarios: the same store, checks and audit entries as the ``/whatif`` page.

The scenarios are those the editor shows (:func:`dashboard.whatif.store.scenario_store`:
the database when the server has one, else the server's memory), all on the server's
own site.  An edit is checked by the editor's own function
(:func:`dashboard.whatif.edits.resolve_edits`, the whole list with the new edit, on the
site) before the store keeps it, and the edit models of :mod:`twin.site.edit_schema` are
both the document's schema of an edit and its validation; a file is read by the editor's import
(:func:`dashboard.whatif.store.import_toml`).  Every change writes the audit entry the
editor's button writes (``scenario.new``, ``scenario.import``, ``scenario.edit``,
``scenario.undo``, ``scenario.redo``, ``scenario.rename``, ``scenario.duplicate``,
``scenario.delete``), with the state before and after.
"""

from __future__ import annotations

import flask

from dashboard.api import models as m
from dashboard.api.access import audit
from dashboard.api.routing import ApiError, NotFound, Unprocessable, api
from dashboard.api.scenarios import projection
from dashboard.callbacks.inputs import InputError
from dashboard.views.context import live_view, site_db
from dashboard.whatif.edits import EditRejected, canonical, resolve_edits
from dashboard.whatif.outcome import live_load
from dashboard.whatif.store import export_toml, import_toml, scenario_store
from twin.errors import InputError as TwinInputError

TAG = "what-if"
BASE = "/whatif/scenarios"


def _store():
    return scenario_store(live_view(), site_db(), flask.current_app.config)


def _existing(store, name: str) -> str:
    if name not in store.names():
        raise NotFound(f"no what-if scenario named {name!r}")
    return name


def _free(store, name: str) -> None:
    if name in store.names():
        raise ApiError(409, f"a scenario named {name!r} exists already")


def _entry(store, name: str) -> dict:
    can_undo, can_redo = store.can_undo_redo(name)
    return {
        "name": name,
        "site": store.site,
        "position": len(store.edits(name)),
        "can_undo": can_undo,
        "can_redo": can_redo,
    }


def _scenario(store, name: str) -> m.StoredScenario:
    return m.StoredScenario(**_entry(store, name), edits=store.edits(name))


def _refused(call):
    """Run a store or validation call; an edit or file it refuses is 422 with its one-line reason."""
    try:
        return call()
    except EditRejected as exc:
        raise Unprocessable(f"edit.{exc.field}: {exc.message}" if exc.index is None else str(exc)) from None
    except (InputError, TwinInputError) as exc:
        raise Unprocessable(str(exc)) from None


@api.route(
    "GET",
    BASE,
    summary="The what-if scenarios of the editor (the server's site)",
    tag=TAG,
    response=m.StoredScenarioList,
)
def list_whatif() -> m.StoredScenarioList:
    store = _store()
    return m.StoredScenarioList(
        persistent_flag=store.persistent, items=[m.StoredScenarioEntry(**_entry(store, n)) for n in store.names()]
    )


@api.route(
    "POST",
    BASE,
    summary="Create a what-if scenario, empty or from a scenario file's edits",
    role="operator",
    tag=TAG,
    body=m.CreateScenarioBody,
    response=m.StoredScenario,
    errors=(409, 422),
)
def create_whatif(body: m.CreateScenarioBody) -> m.StoredScenario:
    store = _store()
    if body.toml is None:
        if body.name is None:
            raise ApiError(400, "body: give a name, or a scenario file in toml")
        _free(store, body.name.strip())
        name = _refused(lambda: store.create(body.name))
        audit("scenario.new", f"scenario {name}", None, {"message": f"created {name}", "edits": 0})
        return _scenario(store, name)
    file_name, edits = _refused(lambda: import_toml(body.toml))
    name = (body.name or file_name).strip()
    _free(store, name)
    _refused(lambda: resolve_edits(live_view().state, edits))  # every edit applies to this site, or nothing is stored
    name = _refused(lambda: store.create(name, edits))
    audit(
        "scenario.import",
        f"scenario {name}",
        None,
        {"message": f"imported {name} ({len(edits)} edits)", "edits": len(edits)},
    )
    return _scenario(store, name)


@api.route(
    "GET",
    BASE + "/{name}",
    summary="One what-if scenario with its applied edits",
    tag=TAG,
    params=m.StoredNameParam,
    response=m.StoredScenario,
    errors=(404,),
)
def get_whatif(params: m.StoredNameParam) -> m.StoredScenario:
    store = _store()
    return _scenario(store, _existing(store, params.name))


@api.route(
    "POST",
    BASE + "/{name}/edits",
    summary="Append an edit (checked with the scenario's edits on the site)",
    role="operator",
    tag=TAG,
    params=m.StoredNameParam,
    body=m.AppendEditBody,
    response=m.StoredScenario,
    errors=(404, 422),
)
def append_whatif_edit(params: m.StoredNameParam, body: m.AppendEditBody) -> m.StoredScenario:
    store = _store()
    name = _existing(store, params.name)
    edits = store.edits(name)
    state = live_view().state

    def check() -> dict:
        """The edit as the schema writes it, once it applies with the stored edits on the site."""
        try:
            edit = canonical(body.edit, len(edits))
            resolve_edits(state, edits + [edit], body.design_limits)
            return edit
        except EditRejected as exc:  # the stored edits were accepted before: the new one is refused
            if exc.index == len(edits):
                raise EditRejected(None, exc.field, exc.message) from None
            raise

    edit = _refused(check)
    _refused(lambda: store.push(name, edit))
    audit("scenario.edit", f"scenario {name}", {"edits": len(edits)}, {"edits": len(edits) + 1, "edit": edit})
    return _scenario(store, name)


def _step(name: str, undo: bool) -> m.StoredScenario:
    store = _store()
    _existing(store, name)
    before = len(store.edits(name))
    if not _refused(lambda: store.undo(name) if undo else store.redo(name)):
        raise ApiError(409, f"scenario {name!r}: nothing to {'undo' if undo else 'redo'}")
    audit(
        f"scenario.{'undo' if undo else 'redo'}",
        f"scenario {name}",
        {"edits": before},
        {"message": "", "edits": len(store.edits(name))},
    )
    return _scenario(store, name)


@api.route(
    "POST",
    BASE + "/{name}/undo",
    summary="Undo the last applied edit",
    role="operator",
    tag=TAG,
    params=m.StoredNameParam,
    response=m.StoredScenario,
    errors=(404, 409),
)
def undo_whatif(params: m.StoredNameParam) -> m.StoredScenario:
    return _step(params.name, undo=True)


@api.route(
    "POST",
    BASE + "/{name}/redo",
    summary="Redo the last undone edit",
    role="operator",
    tag=TAG,
    params=m.StoredNameParam,
    response=m.StoredScenario,
    errors=(404, 409),
)
def redo_whatif(params: m.StoredNameParam) -> m.StoredScenario:
    return _step(params.name, undo=False)


@api.route(
    "POST",
    BASE + "/{name}/rename",
    summary="Rename a what-if scenario",
    role="operator",
    tag=TAG,
    params=m.StoredNameParam,
    body=m.RenameBody,
    response=m.StoredScenario,
    errors=(404, 409, 422),
)
def rename_whatif(params: m.StoredNameParam, body: m.RenameBody) -> m.StoredScenario:
    store = _store()
    old = _existing(store, params.name)
    if body.name.strip() != old:
        _free(store, body.name.strip())
    new = _refused(lambda: store.rename_scenario(old, body.name))
    audit(
        "scenario.rename",
        f"scenario {new}",
        {"name": old},
        {"message": f"renamed to {new}", "edits": len(store.edits(new))},
    )
    return _scenario(store, new)


@api.route(
    "POST",
    BASE + "/{name}/duplicate",
    summary="Copy a what-if scenario with its applied edits",
    role="operator",
    tag=TAG,
    params=m.StoredNameParam,
    body=m.RenameBody,
    response=m.StoredScenario,
    errors=(404, 409, 422),
)
def duplicate_whatif(params: m.StoredNameParam, body: m.RenameBody) -> m.StoredScenario:
    store = _store()
    source = _existing(store, params.name)
    _free(store, body.name.strip())
    new = _refused(lambda: store.duplicate(source, body.name))
    audit(
        "scenario.duplicate",
        f"scenario {new}",
        None,
        {"message": f"duplicated as {new}", "edits": len(store.edits(new)), "copy_of": source},
    )
    return _scenario(store, new)


@api.route(
    "DELETE",
    BASE + "/{name}",
    summary="Delete a what-if scenario",
    role="operator",
    tag=TAG,
    params=m.StoredNameParam,
    response=m.StoredScenario,
    errors=(404,),
)
def delete_whatif(params: m.StoredNameParam) -> m.StoredScenario:
    """The answer is the scenario as it was, so a script can store it again."""
    store = _store()
    gone = _scenario(store, _existing(store, params.name))
    edit_list = store.edits(gone.name)
    _refused(lambda: store.delete(gone.name))
    audit(
        "scenario.delete",
        f"scenario {gone.name}",
        {"edits": len(edit_list), "edit_list": edit_list},
        {"message": f"deleted {gone.name}", "edits": 0},
    )
    return gone


@api.route(
    "GET",
    BASE + "/{name}/export",
    summary="The scenario as a scenario file (TOML), as the editor exports it",
    tag=TAG,
    params=m.StoredNameParam,
    media_type="application/toml",
    errors=(404,),
)
def export_whatif(params: m.StoredNameParam) -> flask.Response:
    store = _store()
    name = _existing(store, params.name)
    return flask.Response(
        export_toml(name, store.edits(name)),
        mimetype="application/toml",
        headers={"Content-Disposition": f'attachment; filename="{name}.toml"'},
    )


@api.route(
    "POST",
    BASE + "/{name}/project",
    summary="Project the site under a what-if scenario (as POST /project)",
    tag=TAG,
    params=m.StoredNameParam,
    response=m.Projection,
    errors=(404, 503),
)
def project_whatif(params: m.StoredNameParam) -> m.Projection:
    store = _store()
    name = _existing(store, params.name)
    text = export_toml(name, store.edits(name))
    view = live_view()
    return m.Projection.model_validate(projection(view.state, text, f"{name}.toml", live_load(view)))
