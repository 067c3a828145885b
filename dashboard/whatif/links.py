"""Links from the floor, power and cooling pages into the what-if editor (``/whatif``).

``/whatif?racks=NAME`` opens the editor with that rack selected; ``trip=KIND:NAME`` chooses
the element of the blast-radius panel (and runs nothing until asked).
"""

from __future__ import annotations

from urllib.parse import urlencode

from dash import dcc

WHATIF_PATH = "/whatif"


def rack_href(rack: str | None) -> str:
    """The editor with ``rack`` selected and its blast radius ready."""
    if not rack:
        return WHATIF_PATH
    return f"{WHATIF_PATH}?{urlencode({'racks': rack, 'trip': f'rack:{rack}'})}"


def trip_href(kind: str | None, name: str | None) -> str:
    """The editor with ``name`` (a ``kind`` of :data:`dashboard.whatif.outcome.BLAST_KINDS`) in the blast-radius panel."""
    if not kind or not name:
        return WHATIF_PATH
    return f"{WHATIF_PATH}?{urlencode({'trip': f'{kind}:{name}'})}"


def whatif_link(link_id: str, href: str, text: str) -> dcc.Link:
    """The link as the pages show it."""
    return dcc.Link(text, id=link_id, href=href, className="whatif-link")
