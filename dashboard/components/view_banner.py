"""The view banner under the header: which non-live view is on screen, and what it is compared with.

Live shows no banner.  A scenario is amber, a replay violet, an unavailable view red, a
kind of view registered later slate (its note comes from the view registry,
:func:`dashboard.views.registry.view_note`); a comparison adds the other view and a link
toggling side by side / difference.  Colours and contrast are in ``assets/views.css``.
"""

from __future__ import annotations

from datetime import UTC
from urllib.parse import urlencode

from dash import dcc, html

from dashboard.views.context import ViewSelection
from dashboard.views.registry import view_note


def kind_of(key: str) -> str:
    """The kind of a view key (``live``, ``scenario``, ``replay`` …: the text before ':')."""
    return key.partition(":")[0] if ":" in key else "live"


def view_time(view) -> str:
    """The time of the view's snapshot, ``2024-07-22 20:00 UTC`` (a replay to the second; ``no data`` without one)."""
    snapshot = view.latest()
    if snapshot is None:
        return "no data"
    when = "%Y-%m-%d %H:%M:%S" if kind_of(view.key) == "replay" else "%Y-%m-%d %H:%M"
    return f"{snapshot.ts.astimezone(UTC):{when}} UTC"


def _chip(view) -> html.Span:
    kind = "live" if view.is_live else kind_of(view.key)
    if view.is_live:
        return html.Span(html.Strong("LIVE", className="view-kind"), className="view-chip view-chip-live")
    return html.Span(
        [
            html.Strong(kind.upper(), className="view-kind"),
            " ",
            view.label.split(" · ", 1)[-1],
            html.Span(" · " + view_time(view), className="view-time"),
        ],
        className=f"view-chip view-chip-{kind}",
    )


def _href(selection: ViewSelection, **changes) -> str:
    params = {**selection.params(), **changes}
    return "?" + urlencode({k: v for k, v in params.items() if v})


def banner(screen) -> tuple[list, str, bool]:
    """(children, class, hidden) of the banner for a :class:`dashboard.views.registry.Screen`."""
    view, other = screen.view, screen.compare
    if view.is_live and other is None:
        return [], "view-banner", True
    kind = "compare" if other is not None and view.is_live else kind_of(view.key)
    parts: list = [_chip(view)]
    if other is not None:
        mode = "difference" if screen.diff else "side by side"
        parts += [
            html.Span(f" compared with ({mode}) ", className="view-vs"),
            _chip(other),
            " ",
            dcc.Link(
                "show side by side" if screen.diff else "show difference",
                href=_href(screen.selection, diff="" if screen.diff else "1"),
                className="view-action",
            ),
        ]
    else:
        parts.append(html.Span(f" · {view_note(kind)}", className="view-note"))
    parts.append(dcc.Link("back to live", href="?view=live", className="view-action"))
    return parts, f"view-banner view-banner-{kind}", False


def unavailable_banner(message: str) -> tuple[list, str, bool]:
    """The banner of a view that cannot be shown."""
    return (
        [
            html.Strong("VIEW NOT AVAILABLE", className="view-kind"),
            " ",
            message,
            " ",
            dcc.Link("back to live", href="?view=live", className="view-action"),
        ],
        "view-banner view-banner-error",
        False,
    )
