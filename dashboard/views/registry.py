"""The view registry: a view key from the URL → the view a page renders, and the screen of a layout or callback.

Every kind of view key (a :class:`twin.engine.view.ViewKind`: how its keys are read and
written) has a *resolver* here: ``resolver(key, live)`` turns a parsed key into the view
to show, given the app's live view; what cannot be shown raises :class:`ViewUnavailable`
with a message meant for the page, never a traceback.  :func:`register_view_kind`
registers both at once, so a new kind of view needs no edit here nor in the pages.  The
kinds built in:

* ``live`` — the app's live view;
* ``scenario:<name>`` — a :class:`dashboard.views.scenario_files.ScenarioView` (the twin
  settled under ``data/scenarios/<name>.toml`` on the live view's site); without such a
  file, the what-if editor's scenario of that name (:mod:`dashboard.whatif.view`);
* ``replay:<incident>@<time>`` — a :class:`dashboard.views.replay.ReplayView`: the
  recorded incident at the frame nearest that time.

What is on screen (:class:`Screen`: a view, maybe another to compare it with) comes from
the page URL: a layout reads its query parameters (:func:`layout_screen`), a callback the
shell's screen store it is given (:func:`callback_screen`, see :mod:`dashboard.views.context`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from dashboard.views.context import ViewSelection, live_view, parse_selection, path_of, selection_of
from dashboard.views.unavailable import ViewUnavailable
from twin.engine.view import (
    LIVE,
    REPLAY,
    SCENARIO,
    View,
    ViewKey,
    ViewKind,
    parse_view_key,
)
from twin.engine.view import (
    register_view_kind as register_key_syntax,
)

Resolver = Callable[[ViewKey, View], View]  # (parsed key, the app's live view) → the view to show
_RESOLVERS: dict[str, Resolver] = {}
_NOTES: dict[str, str] = {}  # what the view banner says of a kind's views
DEFAULT_NOTE = "not the live site"


def register_resolver(kind: str, resolver: Resolver, note: str = DEFAULT_NOTE) -> None:
    """How keys of the registered kind ``kind`` become views (replaces an earlier resolver of ``kind``).

    ``note`` is what the view banner says of such a view (e.g. "recorded, not live").
    """
    _RESOLVERS[kind] = resolver
    _NOTES[kind] = note


def register_view_kind(kind: ViewKind, resolver: Resolver, note: str = DEFAULT_NOTE) -> None:
    """A new kind of view: its key syntax (:func:`twin.engine.view.register_view_kind`), resolver and banner note."""
    register_key_syntax(kind)
    register_resolver(kind.name, resolver, note)


def unregister_resolver(kind: str) -> None:
    """Forget the resolver of ``kind`` (its keys then show a message); nothing happens when there is none."""
    _RESOLVERS.pop(kind, None)
    _NOTES.pop(kind, None)


def view_note(kind: str) -> str:
    """What the view banner says of the views of ``kind``."""
    return _NOTES.get(kind, DEFAULT_NOTE)


def resolve(key_text: str | None, live: View) -> View:
    """The view of ``key_text`` (empty: live); :class:`ViewUnavailable` when it cannot be shown."""
    try:
        key = parse_view_key(key_text)
    except ValueError as exc:
        raise ViewUnavailable(str(exc)) from None
    resolver = _RESOLVERS.get(key.kind)
    if resolver is None:
        raise ViewUnavailable(f"view key {key_text!r}: this dashboard cannot show {key.kind} views")
    return resolver(key, live)


def _live(_key: ViewKey, live: View) -> View:
    return live


def _scenario(key: ViewKey, live: View) -> View:
    """A scenario file's view, else the what-if editor's scenario of that name."""
    from dashboard.views.scenario_files import SCENARIO_DIR, scenario_view

    if not (SCENARIO_DIR / f"{key.name}.toml").exists():
        from dashboard.whatif.edits import EditRejected
        from dashboard.whatif.view import editor_scenario_view

        try:
            edited = editor_scenario_view(live, key.name)
        except EditRejected as exc:
            raise ViewUnavailable(f"scenario {key.name!r} cannot run on site {live.state.name!r}: {exc}") from None
        if edited is not None:
            return edited
    return scenario_view(live.state, key.name)


def _replay(key: ViewKey, _live_view: View) -> View:
    from dashboard.views.replay import ReplayError, replay_view

    if key.at is None:  # the key syntax requires an instant; a key built by hand may lack one
        raise ViewUnavailable(f"replay of {key.name!r}: a replay needs an instant, 'replay:<incident>@<iso-time>'")
    try:
        return replay_view(key.name, key.at)
    except ReplayError as exc:
        raise ViewUnavailable(str(exc)) from None


register_resolver(LIVE, _live, note="")
register_resolver(SCENARIO, _scenario, note="a what-if, not the live site")
register_resolver(REPLAY, _replay, note="recorded, not live")


# --------------------------------------------------------------- what is on screen
@dataclass(frozen=True)
class Screen:
    """The views a page renders: ``view``, and ``compare`` (another view or None) shown against it."""

    view: View
    compare: View | None
    diff: bool
    selection: ViewSelection


def screen_for(selected: ViewSelection, live: View) -> Screen:
    """Resolve both keys of ``selected``; :class:`ViewUnavailable` names the key that failed."""
    view = resolve(selected.view, live)
    other = resolve(selected.compare, live) if selected.compare else None
    return Screen(view, other, selected.diff and other is not None, selected)


def layout_screen(**layout_kwargs) -> Screen:
    """For layouts: the screen their query parameters (``view``, ``compare``, ``diff``) name; may raise :class:`ViewUnavailable`."""
    return screen_for(parse_selection(layout_kwargs), live_view())


def on_page(shown: dict | None, page: str) -> None:
    """Stop a callback of the page at path ``page`` when the screen store ``shown`` names another page.

    Navigation has then removed (or is removing) the page the callback belongs to: an
    answer would update, or patch, components that are gone.  An unset store names no page.
    """
    from dash.exceptions import PreventUpdate

    path = path_of(shown)
    if path is not None and path != "/" + page.strip("/"):
        raise PreventUpdate


def callback_screen(shown: dict | None, page: str | None = None) -> Screen:
    """For callbacks: the screen the shell's screen store ``shown`` names (``State(ids.Shell.SCREEN, "data")``).

    The update stops (``PreventUpdate``) when the store is not set yet, when it names a
    page other than ``page`` (see :func:`on_page`), or a view that cannot be shown (its
    page says why).
    """
    from dash.exceptions import PreventUpdate

    if path_of(shown) is None:
        raise PreventUpdate
    if page is not None:
        on_page(shown, page)
    try:
        return screen_for(selection_of(shown), live_view())
    except ViewUnavailable:
        raise PreventUpdate from None


def callback_view(shown: dict | None, page: str | None = None) -> View:
    """For callbacks: the view on screen (see :func:`callback_screen`)."""
    return callback_screen(shown, page).view


def view_layout(layout: Callable) -> Callable:
    """Decorate a page's ``layout(**kwargs)``: a view that cannot be shown gives a message, not a traceback."""

    @functools.wraps(layout)
    def wrapped(*args, **kwargs):
        try:
            return layout(*args, **kwargs)
        except ViewUnavailable as exc:
            return unavailable_page(str(exc))

    return wrapped


def unavailable_page(message: str):
    """The page body shown instead of a page when its view cannot be shown."""
    from dash import dcc, html

    from dashboard import ids
    from dashboard.views.scenario_files import available_scenarios

    return html.Div(
        [
            html.H1("View not available"),
            html.P(message, id=ids.Shell.VIEW_ERROR, className="view-error"),
            html.P(
                ["Scenarios: "]
                + [
                    item
                    for name in available_scenarios()
                    for item in (dcc.Link(name, href=f"?view=scenario:{name}"), " ")
                ]
                + [" · ", dcc.Link("back to live", href="?")]
            ),
        ],
        className="page page-view-unavailable",
    )
