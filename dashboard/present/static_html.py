"""Dash ``html`` components (and ``dcc.Link``) rendered to an HTML string, for views shown as static markup.

Dash wraps every component it renders in the browser; a view of several hundred cells
(the rack drill-down's GPU grids and tables) then costs the renderer half a second per
update.  Such views are built with the usual component factories, rendered here to one
string on the server and set into an empty container by a clientside callback.  Text and
attribute values are escaped; ``dcc.Link`` becomes ``<a data-dash-link>``, which the page
turns into in-app navigation.  Components with behaviour (inputs, graphs, callbacks)
are refused: they need Dash.
"""

from __future__ import annotations

import re
from html import escape

from dash.development.base_component import Component

_CAMEL = re.compile(r"([A-Z])")
VOID_TAGS = frozenset({"br", "hr", "img", "col", "wbr"})
_ATTRIBUTE_NAMES = {"className": "class", "htmlFor": "for", "colSpan": "colspan", "rowSpan": "rowspan"}
_PLAIN_ATTRIBUTES = frozenset({"id", "title", "href", "colSpan", "rowSpan", "lang", "role"})


def _css(style: dict) -> str:
    """``{"fontSize": "10px"}`` -> ``font-size: 10px``."""
    return "; ".join(_CAMEL.sub(r"-\1", key).lower() + f": {value}" for key, value in style.items())


def _attributes(props: dict) -> str:
    parts = []
    for key, value in props.items():
        if key == "children" or value is None:
            continue
        if key == "style":
            value = _css(value)
        elif key not in _ATTRIBUTE_NAMES and key not in _PLAIN_ATTRIBUTES and not key.startswith(("data-", "aria-")):
            raise ValueError(f"static_html: attribute {key!r} is not static markup")
        parts.append(f' {_ATTRIBUTE_NAMES.get(key, key)}="{escape(str(value), quote=True)}"')
    return "".join(parts)


def to_html(node) -> str:
    """HTML of ``node``: a component, a string or number, None, or a list of these."""
    if node is None:
        return ""
    if isinstance(node, (list, tuple)):
        return "".join(to_html(child) for child in node)
    if isinstance(node, (str, int, float)):
        return escape(str(node), quote=False)
    if not isinstance(node, Component):
        raise TypeError(f"static_html: cannot render {type(node).__name__}")
    props = {key: getattr(node, key) for key in node._prop_names if getattr(node, key, None) is not None}
    props.update(
        {
            key: value
            for key, value in vars(node).items()  # wildcard attributes (data-*, aria-*)
            if key.startswith(("data-", "aria-")) and value is not None
        }
    )
    if node._namespace == "dash_core_components" and node._type == "Link":
        return f"<a data-dash-link{_attributes(props)}>{to_html(props.get('children'))}</a>"
    if node._namespace != "dash_html_components":
        raise ValueError(f"static_html: {node._namespace}.{node._type} needs Dash to render")
    tag = node._type.lower()
    if tag in VOID_TAGS:
        return f"<{tag}{_attributes(props)}>"
    return f"<{tag}{_attributes(props)}>{to_html(props.get('children'))}</{tag}>"
