"""Strict JSON output of the commands: never ``NaN`` or ``Infinity``, which JSON does not have.

A non-finite float becomes ``null`` on purpose (an MTTF without failures, a time to throttle
that never comes); numpy scalars and arrays become plain numbers and lists.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np


def finite_or_null(value: Any) -> Any:
    """``value`` with every non-finite float replaced by ``None`` (recursively, numpy included)."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    elif isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): finite_or_null(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_null(v) for v in value]
    return value


def dumps(value: Any, **kw: Any) -> str:
    """Strict JSON text of ``value`` (see :func:`finite_or_null`); other types via ``str``."""
    return json.dumps(finite_or_null(value), allow_nan=False, default=str, **kw)
