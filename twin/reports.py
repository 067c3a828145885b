"""Typed reports: dataclasses whose fields carry units in their names, turned into JSON only at the edge.

A report class derives from :class:`Report`; :meth:`Report.as_dict` gives its JSON document
(keys are the field names in their order, nested reports become objects, lists and dicts
are converted item by item, objects with an ``as_dict`` of their own use it).  A field
declared with :func:`optional` is left out of the document while it is ``None`` (a part
only some reports have); every other ``None`` is written (JSON ``null``).  Non-finite
numbers are left to the writer (:func:`twin.commands.jsonout.dumps` writes ``null``).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, ClassVar

_OMIT_NONE = "omit_none"


def optional(default: Any = None) -> Any:
    """A dataclass field left out of :meth:`Report.as_dict` while it is ``None``."""
    return dataclasses.field(default=default, metadata={_OMIT_NONE: True})


def plain(value: Any) -> Any:
    """``value`` as JSON-ready Python: reports and objects with ``as_dict`` as dicts, containers item by item."""
    as_dict = getattr(value, "as_dict", None)
    if callable(as_dict) and not isinstance(value, type):
        return as_dict()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


class Report:
    """Base of the typed reports (a dataclass mixin, see module docstring)."""

    if TYPE_CHECKING:  # every report is a dataclass
        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None and f.metadata.get(_OMIT_NONE):
                continue
            out[f.name] = plain(value)
        return out
