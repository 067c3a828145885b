"""The navigation bar: one link per dashboard page, the active one highlighted."""

from __future__ import annotations

from dash import dcc, html

from dashboard import ids

# (path, label) of every page, in menu order.
PAGES: tuple[tuple[str, str], ...] = (
    ("/", "Overview"),
    ("/floor", "Floor"),
    ("/cooling", "Cooling"),
    ("/power", "Power"),
    ("/fabric", "Fabric"),
    ("/jobs", "Jobs"),
    ("/nodes", "Nodes"),
    ("/alerts", "Alerts"),
    ("/replay", "Replay"),
    ("/whatif", "What-if"),
)


def nav_bar() -> html.Nav:
    """The menu; the active link gets the CSS class ``active`` (clientside callback)."""
    links = [dcc.Link(label, href=path, id=ids.nav_link(path), className="nav-link") for path, label in PAGES]
    return html.Nav(links, id=ids.Shell.NAV, className="nav", **{"aria-label": "pages"})


def active_link_classes(pathname: str | None, paths: list[str]) -> list[str]:
    """CSS class of each link in ``paths`` for the page at ``pathname``."""
    pathname = (pathname or "/").rstrip("/") or "/"
    return ["nav-link active" if path == pathname else "nav-link" for path in paths]
