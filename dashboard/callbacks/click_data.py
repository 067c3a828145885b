"""What a click on a plotly point carries, normalised for callbacks.

A point's ``customdata`` reaches the server as a list, a scalar, or — for rows of a
numeric numpy array, which plotly.js keeps as typed arrays — an object with keys
``"0"``, ``"1"``…  :func:`clicked_custom` returns it as a list in every case.
"""

from __future__ import annotations


def clicked_custom(click: dict | None) -> list | None:
    """``customdata`` of the first clicked point as a list (None without a click or customdata)."""
    if not click or not click.get("points"):
        return None
    custom = click["points"][0].get("customdata")
    if custom is None:
        return None
    if isinstance(custom, dict):
        return [custom[k] for k in sorted(custom, key=lambda k: int(k) if str(k).isdigit() else 0)]
    if isinstance(custom, (list, tuple)):
        return list(custom)
    return [custom]
