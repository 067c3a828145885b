"""Figure updates relayed through a store of the page, so that a page navigation cannot break them.

A callback answering with a ``dash.Patch`` is applied by the browser to the figure the
page had when the request left.  When the operator navigates while the answer is on its
way (the live tick fires every two seconds), the answer can arrive after the new page
replaced the old one but before Dash dropped the callback: the browser then finds no
figure to patch and reports "Cannot patch undefined".

A relay closes that gap.  The server callback writes its figure values (patches or whole
figures) as plain data into a ``dcc.Store`` that lives on the same page as the figures;
an answer for a store that is gone is dropped like any other plain value.  A clientside
callback of the store then hands the values to the figures: it runs only while the store
(and with it its figures) is on screen, and applies each patch to the figure the page has
at that moment.  Every callback that writes a patch has a relay of its own, so two
answers landing together cannot overwrite each other in one store.
"""

from __future__ import annotations

from dataclasses import dataclass

import dash
from dash import Input, Output, dcc, no_update

# Hands each value of the relayed data to its output (by position); a wildcard (ALL) output
# gets the value once for every component it matches.  Outputs without a value are left alone.
_RELAY_JS = """
function(data) {
    var dc = window.dash_clientside;
    return dc.callback_context.outputs_list.map(function(output, i) {
        var sent = data && Object.prototype.hasOwnProperty.call(data, String(i));
        var value = sent ? data[String(i)] : dc.no_update;
        return Array.isArray(output) ? output.map(function() { return value; }) : value;
    });
}
"""


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

    def send(self, *values):
        """What the server callback returns for the targets' ``values`` (in ``targets`` order).

        ``no_update`` leaves a target alone; nothing to send at all is ``no_update`` for the store.
        """
        if len(values) != len(self.targets):
            raise ValueError(f"relay {self.store_id} feeds {len(self.targets)} outputs, got {len(values)} values")
        data = {str(i): value for i, value in enumerate(values) if not isinstance(value, type(no_update))}
        return data if data else no_update


def relay(store_id: str, *targets: tuple[object, str]) -> PatchRelay:
    """A :class:`PatchRelay` from ``store_id`` to the ``targets``; registers its clientside callback
    (like ``dash.callback``: call it where the page module registers its callbacks)."""
    relayed = PatchRelay(store_id, tuple(targets))
    dash.clientside_callback(
        _RELAY_JS,
        [Output(target, prop, allow_duplicate=True) for target, prop in relayed.targets],
        Input(store_id, "data"),
        prevent_initial_call=True,
    )
    return relayed
