"""The one bounded cache of the code base: least recently used entries go first, thread-safe.

Every module-level cache of ``twin/``, ``ingest/`` and ``dashboard/`` is a :class:`BoundedCache`,
so none grows without limit in a server that runs for months.  Each use documents its key
where the cache is made.  Keys that hold an object's ``id()`` must be checked against the
object itself (``valid=``): an id is reused once the object is gone.

The store is :class:`cachetools.LRUCache` (a kept library instead of a hand-written ordered
dict); the lock and the make-once logic are here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar, cast

from cachetools import LRUCache

V = TypeVar("V")


def _always(_value: object) -> bool:
    return True


class BoundedCache(Generic[V]):
    """At most ``maxsize`` values by key; :meth:`get_or_make` is the way in.

    ``single_flight=True`` makes missing values one at a time (for costly makes that many
    requests ask for at once, such as a replay); otherwise two threads may both make a
    missing value and the later one is kept.
    """

    def __init__(self, maxsize: int, single_flight: bool = False) -> None:
        if maxsize < 1:
            raise ValueError(f"a cache holds at least one entry, not {maxsize}")
        self.maxsize = maxsize
        self._store: LRUCache[Hashable, V] = LRUCache(maxsize=maxsize)
        self._lock = threading.Lock()
        self._make_lock = threading.Lock() if single_flight else None

    def _lookup(self, key: Hashable, valid: Callable[[V], bool]) -> tuple[bool, V | None]:
        """(found, value): found when ``key`` is kept and ``valid(value)`` (a hit refreshes it)."""
        with self._lock:
            if key not in self._store:
                return False, None
            value = self._store[key]
        return (True, value) if valid(value) else (False, None)

    def get(self, key: Hashable, valid: Callable[[V], bool] = _always) -> V | None:
        """The value kept for ``key`` when there is one and ``valid(value)``, else None."""
        return self._lookup(key, valid)[1]

    def put(self, key: Hashable, value: V) -> V:
        """Keep ``value`` for ``key`` (the least recently used entry goes when full); returns ``value``."""
        with self._lock:
            self._store[key] = value
        return value

    def get_or_make(self, key: Hashable, make: Callable[[], V], valid: Callable[[V], bool] = _always) -> V:
        """The value kept for ``key`` (None is a value too), else ``make()``'s, kept; ``make`` runs outside the lock."""
        found, value = self._lookup(key, valid)
        if not found:
            if self._make_lock is None:
                return self.put(key, make())
            with self._make_lock:
                found, value = self._lookup(key, valid)
                if not found:
                    return self.put(key, make())
        return cast(V, value)

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._store.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._store)
