"""Callbacks that change stored state, in one registry, for the role check of the auth layer.

A page marks each callback that writes something (a scenario, its edits) with
:func:`operator_action`; the registry then holds the callback's output ids as Dash
names them in ``/_dash-update-component`` requests (the ``output`` field).  An auth
layer refuses those requests unless the user holds :data:`REQUIRED_ROLE`, server-side,
by checking ``body["output"] in state_changing_outputs()``.
"""

from __future__ import annotations

from collections.abc import Callable

REQUIRED_ROLE = "operator"
_OUTPUT_IDS: set[str] = set()  # component ids whose callbacks change state


def operator_action(*output_ids: str) -> Callable[[Callable], Callable]:
    """Mark a callback (by the ids of its outputs) as state-changing: operator role required."""
    _OUTPUT_IDS.update(output_ids)

    def mark(callback: Callable) -> Callable:
        callback.state_changing = True
        callback.required_role = REQUIRED_ROLE
        return callback

    return mark


def state_changing_ids() -> frozenset[str]:
    """Component ids written by state-changing callbacks."""
    return frozenset(_OUTPUT_IDS)


def is_state_changing(output: str) -> bool:
    """Whether a callback request's ``output`` field (``id.prop`` or ``..a.p...b.q..``) writes state."""
    parts = output.strip(".").split("...")
    return any(part.rsplit(".", 1)[0] in _OUTPUT_IDS for part in parts)
