"""The twin's per-tick extras (:class:`twin.engine.tick.TickDetail`) behind the hub, when it has them.

The Snapshot contract carries one time-to-throttle scenario and no site balance; the
engine keeps the other failure scenarios, the supply balance and the swing report in
``TickDetail``.  Pages use them when the hub offers them (``hub.detail()``, or the
engine the live hub runs as ``hub.twin``) and fall back to the Snapshot otherwise.
"""

from __future__ import annotations


def tick_detail(hub):
    """The latest ``TickDetail`` of ``hub``, or None (stand-in hubs, replays)."""
    accessor = getattr(hub, "detail", None)
    if callable(accessor):
        return accessor()
    return getattr(getattr(hub, "twin", None), "detail", None)
