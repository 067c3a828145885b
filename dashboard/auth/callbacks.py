"""Roles of Dash callbacks, checked on the server before Dash runs them.

A callback that changes state (or shows what only some roles may see) is marked with
:func:`callback_requires` under its ``@dash.callback``::

    @dash.callback(Output(...), Input(ids.alert_ack(ALL), "n_clicks"), Input(ids.Shell.TICK, "n_intervals"))
    @callback_requires("operator", on=(ids.ALERT_ACK,))
    def update_alerts(...): ...

``on`` names the inputs that make it change something (a component id, or the ``type``
of a pattern-matching id); a request triggered by any other input (a live tick) runs for
everyone.  Without ``on`` every request needs the role.  :func:`build_registry` collects
the marks of an app's callbacks by callback key (the ``output`` field of a
``/_dash-update-component`` body); :func:`refusal` tells the request hook what to refuse.
Dash derives ``ctx.triggered_id`` from the same ``changedPropIds`` this check reads, so
a body cannot pass the check as a tick and then act as a click.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

ROLE_ATTR = "clustertwin_required_role"
TRIGGERS_ATTR = "clustertwin_role_triggers"


@dataclass(frozen=True)
class CallbackRule:
    """The role a callback needs, and the triggering inputs that need it (None: all)."""

    role: str
    on: frozenset[str] | None = None


def callback_requires(role: str, on: tuple[str, ...] | None = None):
    """Mark a Dash callback function as needing ``role`` (when triggered by ``on``); see the module doc."""

    def mark(func):
        setattr(func, ROLE_ATTR, role)
        setattr(func, TRIGGERS_ATTR, frozenset(on) if on is not None else None)
        return func

    return mark


def build_registry(callback_map: dict) -> dict[str, CallbackRule]:
    """Callback key → rule, for every marked callback of an app (Dash's ``@wraps`` keeps the marks)."""
    registry = {}
    for key, entry in callback_map.items():
        func = entry.get("callback")
        role = getattr(func, ROLE_ATTR, None)
        if role is not None:
            registry[key] = CallbackRule(role, getattr(func, TRIGGERS_ATTR, None))
    return registry


def trigger_name(changed_prop_id: str) -> str:
    """The component a ``changedPropIds`` entry names: a string id, or the ``type`` of a dict id."""
    component = changed_prop_id.rsplit(".", 1)[0]
    if component.startswith("{"):
        try:
            parsed = json.loads(component)
        except ValueError:
            return component
        return str(parsed.get("type", component)) if isinstance(parsed, dict) else component
    return component


def required_role(registry: dict[str, CallbackRule], body) -> str | None:
    """The role a callback request needs (None: any logged-in user, or not a marked callback)."""
    if not isinstance(body, dict):
        return None
    rule = registry.get(body.get("output"))
    if rule is None:
        return None
    if rule.on is None:
        return rule.role
    changed = body.get("changedPropIds")
    if not isinstance(changed, list):
        return rule.role  # malformed: the strict answer
    return rule.role if any(not isinstance(c, str) or trigger_name(c) in rule.on for c in changed) else None
