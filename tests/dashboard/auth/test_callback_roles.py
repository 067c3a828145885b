"""Roles of Dash callbacks, enforced on the server.

* Every callback of the app that writes to the store is in the role registry (a static
  reading of the callback functions and what they call), so a new callback that writes
  cannot slip through without a role.
* Crafted ``/_dash-update-component`` POSTs for every registered callback: anonymous
  clients get 401 and viewers 403, and nothing changes in the database; operators can.
* A viewer's alerts page has no action buttons.
"""

from __future__ import annotations

import ast
import inspect
import json
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlmodel import Session, func, select

import dashboard
import ingest.live.hub
import ingest.store
from dashboard import ids
from dashboard.auth.access import auth_state
from dashboard.auth.callbacks import trigger_name
from ingest.store.models import AuditEntry
from ingest.store.users import ROLE_RANK
from tests.dashboard.auth.conftest import alert_action_body, alert_rows

DASHBOARD_DIR = Path(dashboard.__file__).resolve().parent
STORE_DIR = Path(ingest.store.__file__).resolve().parent
INGEST_DIR = STORE_DIR.parent
WRITE_MARKS = ("commit(", "_update_event(", "self._writes.run(")
# Writer names too common elsewhere to read as a store write (dict.update, figure.update, a replay's
# step, a semaphore's release): the alert store's update and the hub's step run only in the ingest tick,
# the ingest lease's release only in the ingest runtime, never from a web request, and the login counters'
# release only in the login route, which is no Dash callback.
COMMON_NAMES = {"update", "step", "release"}


def _calls(node: ast.AST) -> set[str]:
    """Names of the functions and methods ``node`` calls (``x.y.z()`` → ``z``)."""
    out = set()
    for call in ast.walk(node):
        if isinstance(call, ast.Call):
            target = call.func
            if isinstance(target, ast.Attribute):
                out.add(target.attr)
            elif isinstance(target, ast.Name):
                out.add(target.id)
    return out


def _functions(paths) -> dict[str, list[ast.AST]]:
    """Every function defined in ``paths``, by name (a name may be defined in several modules)."""
    found: dict[str, list[ast.AST]] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.setdefault(node.name, []).append(node)
    return found


def store_writers() -> set[str]:
    """Names of the functions and live-hub methods that write to the database (directly or through each other)."""
    live_dir = Path(ingest.live.hub.__file__).parent
    sources = list(STORE_DIR.glob("*.py")) + [
        live_dir / f"{name}.py" for name in ("hub", "alerts", "alert_actions", "live_alerts", "recording", "publisher")
    ]
    functions = _functions(sources)
    writers = {
        name for name, nodes in functions.items() if any(mark in ast.unparse(n) for n in nodes for mark in WRITE_MARKS)
    }
    while True:  # fixpoint: what calls a writer writes
        more = {
            name for name, nodes in functions.items() if name not in writers and any(_calls(n) & writers for n in nodes)
        }
        if not more:
            return {w for w in writers if not w.startswith("_") and "benchmark" not in w} - COMMON_NAMES
        writers |= more


@dataclass(frozen=True)
class Scope:
    """A function body to read, with what its module imports from ``ingest`` (local name → module.name)."""

    node: ast.AST
    module: str
    imports: dict


def _module_name(path: Path) -> str:
    root = DASHBOARD_DIR.parent
    return ".".join(path.resolve().relative_to(root).with_suffix("").parts)


def _ingest_imports(tree: ast.AST) -> dict[str, str]:
    """``from ingest.x import y [as z]`` anywhere in ``tree`` (module level or inside functions): z → ingest.x.y."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ingest"):
            for alias in node.names:
                out[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return out


def _scopes(paths) -> tuple[dict[str, list[Scope]], dict[str, Scope]]:
    """Functions of ``paths`` by bare name, and by qualified ``module.name`` (top-level functions)."""
    by_name: dict[str, list[Scope]] = {}
    qualified: dict[str, Scope] = {}
    for path in paths:
        tree = ast.parse(path.read_text())
        module, imports = _module_name(path), _ingest_imports(tree)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                by_name.setdefault(node.name, []).append(Scope(node, module, imports))
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qualified[f"{module}.{node.name}"] = Scope(node, module, imports)
    return by_name, qualified


@dataclass
class CallGraph:
    """What a callback can reach: dashboard functions by name, ingest functions through their imports.

    Following only the dashboard's own functions missed writes made through ``ingest/``: the
    replay page's calibration called ``ingest.replay.calibrate.save_calibration``, which stores a
    site version through ``ingest.store.siteversions.record_site_version``, so neither name
    was ever read.  An ingest function is followed when the calling module imports it by that
    name (``from ingest.replay.calibrate import save_calibration``) or, inside ``ingest/``, when
    it is defined in the caller's own module: resolved names, so that common method names
    (``get``, ``view``) of unrelated ingest classes are not taken for the ones called.
    """

    dashboard: dict[str, list[Scope]]
    ingest: dict[str, Scope]

    @classmethod
    def build(cls) -> CallGraph:
        dashboard_scopes, _ = _scopes(DASHBOARD_DIR.rglob("*.py"))
        _, ingest_scopes = _scopes(INGEST_DIR.rglob("*.py"))
        return cls(dashboard_scopes, ingest_scopes)

    def callees(self, scope: Scope, name: str) -> list[Scope]:
        out = [] if scope.module.startswith("ingest") else list(self.dashboard.get(name, []))
        for qualified in (scope.imports.get(name), f"{scope.module}.{name}"):
            if qualified in self.ingest:
                out.append(self.ingest[qualified])
        return out


def writes_to_store(func, graph: CallGraph, writers: set[str]) -> bool:
    """Whether a callback function calls a store writer, directly or through dashboard and ingest functions."""
    path = Path(inspect.getsourcefile(func))
    first = Scope(
        ast.parse(textwrap.dedent(inspect.getsource(func))),
        _module_name(path),
        _ingest_imports(ast.parse(path.read_text())),
    )
    seen, todo = set(), [first]
    while todo:
        scope = todo.pop()
        called = _calls(scope.node)
        if called & writers:
            return True
        for name in called:
            for callee in graph.callees(scope, name):
                if id(callee.node) not in seen:
                    seen.add(id(callee.node))
                    todo.append(callee)
    return False


def server_callbacks(app) -> dict[str, object]:
    """Callback key → the function Dash runs (clientside callbacks have none)."""
    return {key: inspect.unwrap(entry["callback"]) for key, entry in app.callback_map.items() if "callback" in entry}


@pytest.mark.slow
def test_every_callback_that_writes_to_the_store_needs_operator_or_more(auth_app):
    writers = store_writers()
    assert {"acknowledge", "silence", "unsilence", "record", "add_user", "record_site_version"} <= writers
    graph = CallGraph.build()
    registry = auth_state(auth_app.server).registry
    writing = {key for key, func in server_callbacks(auth_app).items() if writes_to_store(func, graph, writers)}
    assert any(ids.Alerts.ACTION_RESULT in key for key in writing)
    assert any(ids.Replay.CALIBRATION in key for key in writing)
    unguarded = sorted(
        key for key in writing if key not in registry or ROLE_RANK[registry[key].role] < ROLE_RANK["operator"]
    )
    assert unguarded == [], (
        "callbacks that write to the store without a role: mark them with "
        f"@callback_requires(...) (dashboard.auth): {unguarded}"
    )


def crafted_body(app, key: str, rule) -> dict:
    """A callback request for ``key`` triggered by the first input that needs the role, with made-up values."""
    entry = app.callback_map[key]

    def props(specs, value):
        out = []
        for spec in specs:
            component = spec["id"]
            if component.startswith("{"):
                pattern = json.loads(component)
                concrete = {k: (1 if isinstance(v, list) else v) for k, v in pattern.items()}
                out.append([{"id": concrete, "property": spec["property"], "value": value}])
            else:
                out.append({"id": component, "property": spec["property"], "value": value})
        return out

    inputs = props(entry["inputs"], 1)
    changed = []
    for item in inputs:
        first = item[0] if isinstance(item, list) else item
        component = first["id"]
        name = (
            json.dumps(component, separators=(",", ":"), sort_keys=True) if isinstance(component, dict) else component
        )
        prop_id = f"{name}.{first['property']}"
        if rule.on is None or trigger_name(prop_id) in rule.on:
            changed.append(prop_id)
            break
    outputs = entry["output"]
    outputs = outputs if isinstance(outputs, list) else [outputs]
    return {
        "output": key,
        "outputs": [{"id": o.component_id, "property": o.component_property} for o in outputs],
        "inputs": inputs,
        "state": props(entry["state"], "x"),
        "changedPropIds": changed,
    }


def _audit_count(engine) -> int:
    with Session(engine) as session:
        return session.exec(select(func.count()).select_from(AuditEntry)).one()


@pytest.mark.slow
def test_anonymous_and_viewer_cannot_run_any_registered_callback(auth_app, client, fresh_alerts):
    registry = auth_state(auth_app.server).registry
    assert registry, "no callback is registered as needing a role"
    before, audited = alert_rows(fresh_alerts), _audit_count(fresh_alerts.db)
    anonymous, viewer = client(), client()
    viewer.login("vera")
    for key, rule in registry.items():
        body = crafted_body(auth_app, key, rule)
        assert anonymous.http.post("/_dash-update-component", json=body).status_code == 401, key
        response = viewer.callback(body)
        assert response.status_code == 403, (key, response.get_data(as_text=True))
        assert f"needs the {rule.role} role" in response.json["error"]
    assert alert_rows(fresh_alerts) == before and _audit_count(fresh_alerts.db) == audited


@pytest.mark.parametrize("kind", [ids.ALERT_ACK, ids.ALERT_SILENCE, ids.ALERT_UNSILENCE])
@pytest.mark.slow
def test_viewer_cannot_act_on_alerts_and_nothing_changes(client, fresh_alerts, kind):
    alert = fresh_alerts.view.alerts()[0]
    before, audited = alert_rows(fresh_alerts), _audit_count(fresh_alerts.db)
    viewer = client()
    viewer.login("vera")
    assert viewer.callback(alert_action_body(alert["id"], kind)).status_code == 403
    # the same request dressed up as a live tick is let through, but runs as a tick: it changes nothing
    body = alert_action_body(alert["id"], kind)
    body["changedPropIds"] = [f"{ids.Shell.TICK}.n_intervals"]
    assert viewer.callback(body).status_code == 200
    assert alert_rows(fresh_alerts) == before and _audit_count(fresh_alerts.db) == audited


def test_operator_acknowledges_and_silences_with_an_audit_trail(client, fresh_alerts):
    from ingest.store.audit import AuditFilter, list_entries

    alert = fresh_alerts.view.alerts()[0]
    operator = client()
    operator.login("otto")
    response = operator.callback(alert_action_body(alert["id"], ids.ALERT_ACK, comment="pump swap"))
    assert response.status_code == 200 and "acknowledged" in response.get_data(as_text=True)
    assert operator.callback(alert_action_body(alert["id"], ids.ALERT_SILENCE, duration_s=900)).status_code == 200
    acknowledged, comment, silenced_until = alert_rows(fresh_alerts)[alert["id"]]
    assert acknowledged and comment == "pump swap" and silenced_until is not None
    stored = next(a for a in fresh_alerts.view.alerts(active_only=False) if a["id"] == alert["id"])
    assert stored["acknowledged_by"] == "otto"
    entries = list_entries(fresh_alerts.db, AuditFilter(user_name="otto", action="alert."))
    assert [e["action"] for e in entries[:2]] == ["alert.silence", "alert.acknowledge"]
    ack = entries[1]
    assert ack["before"]["acknowledged"] is False and ack["after"] == {
        "acknowledged": True,
        "ack_comment": "pump swap",
        "silenced_until": None,
    }
    assert entries[0]["before"]["silenced_until"] is None and entries[0]["after"]["silenced_until"]
    assert ack["target"].startswith(f"alert {alert['id']}") and ack["address"] == "127.0.0.1"


PAGES_OUTPUT = ".._pages_content.children..._pages_store.data.."


def open_page(c, path: str):
    return c.callback(
        {
            "output": PAGES_OUTPUT,
            "outputs": [{"id": "_pages_content", "property": "children"}, {"id": "_pages_store", "property": "data"}],
            "inputs": [
                {"id": "_pages_location", "property": "pathname", "value": path},
                {"id": "_pages_location", "property": "search", "value": ""},
            ],
            "changedPropIds": ["_pages_location.pathname"],
            "state": [],
        }
    )


@pytest.mark.slow
def test_a_viewer_sees_no_alert_actions_and_an_operator_does(client, fresh_alerts):
    viewer, operator = client(), client()
    viewer.login("vera")
    operator.login("otto")
    seen = open_page(viewer, "/alerts").get_data(as_text=True)
    assert ids.ALERT_ACK not in seen and ids.ALERT_SILENCE not in seen and "read-only" in seen
    assert ids.ALERT_ACK in open_page(operator, "/alerts").get_data(as_text=True)
