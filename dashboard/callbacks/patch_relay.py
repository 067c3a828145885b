"""Figure updates relayed through a store of the page, so that a page navigation cannot break them.

A callback answering with a ``dash.Patch`` is applied by the browser to the figure the
page had when the request left.  When the operator navigates while the answer is on its
way (the live tick fires every two seconds), the answer can arrive after the new page
replaced the old one but before Dash dropped the callback: the browser then finds no
figure to patch and reports "Cannot patch undefined".  And when the new page is the same
page showing another view (``/floor`` → ``/floor?view=scenario:…``: the same component
ids), a late answer computed for the old view would patch the new page's figures.

A relay closes both gaps.  The server callback writes its figure values (patches or whole
figures) as plain data into a ``dcc.Store`` that lives on the same page as the figures,
together with the screen it computed them for (the shell's screen store as the request
carried it: page path and view parameters, see :mod:`dashboard.views.context`); an answer
for a store that is gone is dropped like any other plain value.  A clientside callback of
the store then hands the values to the figures: it runs only while the store (and with it
its figures) is on screen, only when the screen on record is still the one shown, and
applies each patch to the figure the page has at that moment.  Every callback that writes
a patch has a relay of its own, so two answers landing together cannot overwrite each
other in one store.  The server callbacks also stop before rendering when the request
already names another page (:func:`dashboard.views.registry.on_page`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import dash
from dash import Input, Output, State, dcc, no_update

from dashboard import ids
from dashboard.views.context import SCREEN_FIELDS

SCREEN_KEY = "screen"  # the relayed data's record of the screen its values were computed for

# Hands each value of the relayed data to its output (by position) while the screen it was
# computed for is the one shown; a wildcard (ALL) output gets the value once for every
# component it matches.  Outputs without a value are left alone.  window.clustertwinRelays
# counts the answers applied and those dropped for a screen no longer shown.
_RELAY_JS = """
function(data, shown) {
    var dc = window.dash_clientside;
    var fields = %(fields)s;
    var made = data && data.%(key)s;
    var current = made && shown && fields.every(function(field) {
        return (made[field] === undefined ? null : made[field]) === (shown[field] === undefined ? null : shown[field]);
    });
    var counts = window.clustertwinRelays = window.clustertwinRelays || {applied: 0, dropped: 0};
    if (data) { counts[current ? 'applied' : 'dropped'] += 1; }
    return dc.callback_context.outputs_list.map(function(output, i) {
        var sent = current && Object.prototype.hasOwnProperty.call(data, String(i));
        var value = sent ? data[String(i)] : dc.no_update;
        return Array.isArray(output) ? output.map(function() { return value; }) : value;
    });
}
""" % {"fields": json.dumps(list(SCREEN_FIELDS)), "key": SCREEN_KEY}


@dataclass(frozen=True)
class PatchRelay:
    """The store ``store_id`` and the figure properties ``targets`` ((component id, property) pairs) it feeds."""

    store_id: str
    targets: tuple[tuple[object, str], ...]

    @property
    def output(self) -> Output:
        """The server callback's output (instead of the targets')."""
        return Output(self.store_id, "data")

    def store(self) -> dcc.Store:
        """The store to place in the page layout, beside the figures it feeds."""
        return dcc.Store(id=self.store_id)

    def send(self, shown: dict | None, *values):
        """What the server callback returns for the targets' ``values`` (in ``targets`` order), computed for
        the screen ``shown`` (the shell's screen store the request carried).

        ``no_update`` leaves a target alone; nothing to send at all is ``no_update`` for the store.
        """
        if len(values) != len(self.targets):
            raise ValueError(f"relay {self.store_id} feeds {len(self.targets)} outputs, got {len(values)} values")
        data = {str(i): value for i, value in enumerate(values) if not isinstance(value, type(no_update))}
        if not data:
            return no_update
        data[SCREEN_KEY] = {field: (shown or {}).get(field) for field in SCREEN_FIELDS}
        return data


def relay(store_id: str, *targets: tuple[object, str]) -> PatchRelay:
    """A :class:`PatchRelay` from ``store_id`` to the ``targets``; registers its clientside callback
    (like ``dash.callback``: call it where the page module registers its callbacks)."""
    relayed = PatchRelay(store_id, tuple(targets))
    dash.clientside_callback(
        _RELAY_JS,
        [Output(target, prop, allow_duplicate=True) for target, prop in relayed.targets],
        Input(store_id, "data"),
        State(ids.Shell.SCREEN, "data"),
        prevent_initial_call=True,
    )
    return relayed
