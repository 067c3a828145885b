"""Validation of what the browser sends: query parameters, silence durations, windows, selections.

Every function is pure: it returns the validated value or raises :class:`InputError`
with a one-line message an operator can read.  Pages call them from ``layout(**kwargs)``
(through :func:`query_layout`, which falls back to the default and shows a note) and
from callbacks; the app factory answers an :class:`InputError` escaping a callback with
HTTP 400 and that message.

Dash hands a page's query to ``layout(**kwargs)`` via ``urllib.parse.parse_qs``: a
parameter given once arrives as a string, a repeated one (``?rack=a&rack=b``) as a list
of strings.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from dash import html

MAX_SILENCE_S = 7 * 24 * 3600.0  # an alert silenced longer than a week is an alert nobody will see again
MIN_WINDOW_S, MAX_WINDOW_S = 60, 24 * 3600  # trend windows the live view keeps
MAX_PARAM_CHARS = 200  # longer than any site entity name or ISO timestamp


class InputError(ValueError):
    """A value sent by the browser is not acceptable; ``str(error)`` says why in one line."""


def single_param(name: str, value) -> str | None:
    """The one string value of query parameter ``name`` (None when absent).

    Raises :class:`InputError` when it is repeated, not a string, or absurdly long.
    """
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        raise InputError(f"parameter '{name}' given {len(value)} times: give it once")
    if not isinstance(value, str):
        raise InputError(f"parameter '{name}' must be text, not {type(value).__name__}")
    if len(value) > MAX_PARAM_CHARS:
        raise InputError(f"parameter '{name}' is {len(value)} characters long (at most {MAX_PARAM_CHARS})")
    return value


def finite_number(name: str, value) -> float:
    """``value`` (a number or its text) as a finite float; bools, NaN and infinities are refused."""
    if isinstance(value, bool) or value is None:
        raise InputError(f"{name} must be a number, not {value!r}")
    if isinstance(value, str):
        if len(value) > MAX_PARAM_CHARS:
            raise InputError(f"{name} must be a number, not {len(value)} characters of text")
        try:
            number = float(value.strip())
        except ValueError:
            raise InputError(f"{name} must be a number, not {value!r}") from None
    elif isinstance(value, (int, float)):
        number = float(value)
    else:
        raise InputError(f"{name} must be a number, not {type(value).__name__}")
    if not math.isfinite(number):
        raise InputError(f"{name} must be a finite number, not {value!r}")
    return number


def silence_duration_s(value) -> float:
    """A silence duration in seconds: finite, positive and at most :data:`MAX_SILENCE_S` (7 days)."""
    duration_s = finite_number("silence duration", value)
    if not 0 < duration_s <= MAX_SILENCE_S:
        raise InputError(f"silence duration {duration_s:g} s is outside 0 s < duration ≤ {MAX_SILENCE_S:g} s (7 days)")
    return duration_s


def window_s(value) -> int:
    """A trend window in whole seconds between :data:`MIN_WINDOW_S` and :data:`MAX_WINDOW_S`."""
    seconds = finite_number("trend window", value)
    if not MIN_WINDOW_S <= seconds <= MAX_WINDOW_S:
        raise InputError(f"trend window {seconds:g} s is outside {MIN_WINDOW_S}..{MAX_WINDOW_S} s")
    return int(seconds)


def instant(value) -> datetime:
    """An ISO 8601 instant (``2026-07-15T14:02:10Z``; without an offset it is UTC) as aware UTC."""
    if not isinstance(value, str) or len(value) > 40:
        raise InputError(f"time must be ISO 8601 text such as 2026-07-15T14:02:10Z, not {type(value).__name__}")
    try:
        ts = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace(" ", "T"))
    except ValueError:
        raise InputError(f"time {value!r} is not ISO 8601 (e.g. 2026-07-15T14:02:10Z)") from None
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def choice(name: str, value, options: Sequence[str]) -> str:
    """``value`` when it is one of ``options`` (a text parameter or widget value)."""
    if not isinstance(value, str) or value not in options:
        shown = repr(value) if isinstance(value, str) and len(value) <= 40 else type(value).__name__
        raise InputError(f"{name} {shown} is not one of {', '.join(options)}")
    return value


def entity_name(kind: str, value, names: Sequence[str]) -> str:
    """``value`` when it names one of ``names`` (racks, power elements, switches …)."""
    if not isinstance(value, str):
        raise InputError(f"{kind} must be a name, not {type(value).__name__}")
    if value not in names:
        shown = value if len(value) <= 40 else value[:40] + "…"
        raise InputError(f"no {kind} named {shown!r} at this site")
    return value


def one_of(name: str, options: Sequence[str]) -> Callable[[object], str]:
    """A validator for :func:`query_layout`: the parameter must be one of ``options``."""
    options = list(options)
    return lambda value: choice(name, value, options)


def site_entity(kind: str, names_attr: str) -> Callable[[object], str]:
    """A validator for :func:`query_layout`: the parameter must name a ``kind`` of the served site.

    ``names_attr`` is the :class:`~twin.site.tables.SiteTables` list of names
    (``"rack_name"``, ``"power_name"`` …), read from the live view of the current request's app.
    """

    def check(value) -> str:
        from dashboard.views.context import live_view

        return entity_name(kind, value, getattr(live_view().state, names_attr))

    return check


def alert_id(value) -> int | str:
    """The id of an alert button: an int (stored alerts) or a short string (the tests' stand-in views)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)) or (isinstance(value, str) and len(value) > 64):
        raise InputError(f"alert id {value!r} is not an alert id")
    return value


def input_note(messages: list[str]) -> html.Div:
    """The visible note listing the query parameters that were ignored."""
    return html.Div(
        [html.Strong("Ignored in the address: "), "; ".join(messages) + ". Showing the default instead."],
        className="input-note",
        role="status",
        style={"borderLeft": "3px solid var(--warning)", "padding": "4px 8px", "margin": "6px 0"},
    )


def query_layout(**checks: Callable[[object], object]):
    """Decorate a page's ``layout(**kwargs)`` so bad query parameters fall back to defaults with a note.

    Every parameter is first required to be a single short string (:func:`single_param`);
    ``checks`` maps parameter names to validators (``value -> value``, raising
    :class:`InputError`) run on top.  A failing parameter is dropped (the page uses its
    default) and a note above the page says what was ignored.  Valid values are passed
    on unchanged, as the page received them.
    """

    def decorate(layout: Callable[..., html.Div]) -> Callable[..., html.Div]:
        @functools.wraps(layout)
        def checked(**kwargs):
            notes, clean = [], {}
            for name, value in kwargs.items():
                try:
                    text = single_param(name, value)
                    if text is not None and text != "" and name in checks:
                        checks[name](text)
                except InputError as exc:
                    notes.append(str(exc))
                    continue
                clean[name] = text
            page = layout(**clean)
            return html.Div([input_note(notes), page]) if notes else page

        return checked

    return decorate
