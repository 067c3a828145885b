"""JSON text → Python objects, with nesting bounded so no document can exhaust the stack.

The standard decoder recurses once per nesting level and raises ``RecursionError`` near
a thousand levels (a 200k-deep document is a few hundred kilobytes).  :func:`load_json`
turns that into a :class:`JsonError` (a ``ValueError``) naming the limit, and also
rejects documents deeper than ``max_depth`` that the decoder did accept, so the parsers
walking them recursively stay far from the interpreter's limit.
"""

from __future__ import annotations

import json

MAX_DEPTH = 64  # Redfish resources nest < 15 levels, Prometheus answers 6


class JsonError(ValueError):
    """Text that is not JSON, or JSON nested deeper than allowed."""


def nesting_depth(obj, stop_at: int = MAX_DEPTH) -> int:
    """Depth of containers in ``obj`` (a scalar is 0, ``[]`` is 1), counted up to ``stop_at + 1``."""
    deepest = 0
    stack = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > stop_at:
            return deepest
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return deepest


def load_json(text: str | bytes, max_depth: int = MAX_DEPTH):
    """Decode ``text``; raise :class:`JsonError` if it is not JSON or nests deeper than ``max_depth``."""
    try:
        obj = json.loads(text)
    except RecursionError:
        raise JsonError(f"JSON nested too deep (more than {max_depth} levels)") from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise JsonError(f"not JSON: {exc}") from None
    if nesting_depth(obj, max_depth) > max_depth:
        raise JsonError(f"JSON nested too deep (more than {max_depth} levels)")
    return obj
