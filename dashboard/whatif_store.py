"""Where the editor keeps scenarios: named, ordered edit lists with undo and redo.

:func:`scenario_store` gives the app's store: the database store of
``ingest.store.scenarios`` over the live hub's database when both exist, else one
:class:`MemoryScenarioStore` per app (stand-in hubs, a dashboard without a database).
Both offer the same methods; a scenario's edits are plain dicts (see
:mod:`dashboard.whatif_edits`).  Export and import use the scenario file's ``[[edits]]``
array, so a file written here opens in the CLI and in a text diff.
"""

from __future__ import annotations

import re
import threading
import tomllib
from dataclasses import dataclass, field

from dashboard.inputs import InputError

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}")
MAX_SCENARIOS = 200
MAX_TOML_BYTES = 256 * 1024
STORE_CONFIG_KEY = "CLUSTERTWIN_SCENARIO_STORE"


def checked_name(value) -> str:
    """A scenario name: 1–64 letters, digits, space, ``._-``, starting with a letter or digit."""
    if not isinstance(value, str) or not NAME_RE.fullmatch(value.strip()):
        raise InputError("scenario name must be 1–64 letters, digits, spaces or . _ -, starting with a letter or digit")
    return value.strip()


@dataclass
class _Entry:
    edits: list[dict] = field(default_factory=list)
    undone: list[dict] = field(default_factory=list)  # redo stack, last undone last


class MemoryScenarioStore:
    """Scenarios of one site in memory (lost on restart); thread-safe."""

    persistent = False

    def __init__(self, site: str) -> None:
        self.site = site
        self._items: dict[str, _Entry] = {}
        self._lock = threading.Lock()

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._items)

    def _get(self, name: str) -> _Entry:
        entry = self._items.get(name)
        if entry is None:
            raise InputError(f"no scenario named {name!r}")
        return entry

    def create(self, name: str, edits: list[dict] | None = None) -> str:
        name = checked_name(name)
        with self._lock:
            if name in self._items:
                raise InputError(f"a scenario named {name!r} exists already")
            if len(self._items) >= MAX_SCENARIOS:
                raise InputError(f"{MAX_SCENARIOS} scenarios stored already: delete one first")
            self._items[name] = _Entry(list(edits or []))
        return name

    def rename(self, name: str, new: str) -> str:
        new = checked_name(new)
        with self._lock:
            entry = self._get(name)
            if new != name and new in self._items:
                raise InputError(f"a scenario named {new!r} exists already")
            del self._items[name]
            self._items[new] = entry
        return new

    def duplicate(self, name: str, new: str) -> str:
        return self.create(new, self.edits(name))

    def delete(self, name: str) -> None:
        with self._lock:
            self._get(name)
            del self._items[name]

    def edits(self, name: str) -> list[dict]:
        with self._lock:
            return [dict(e) for e in self._get(name).edits]

    def push(self, name: str, edit: dict) -> None:
        """Append an edit that was validated; the redo stack is dropped."""
        with self._lock:
            entry = self._get(name)
            entry.edits.append(dict(edit))
            entry.undone.clear()

    def undo(self, name: str) -> bool:
        with self._lock:
            entry = self._get(name)
            if not entry.edits:
                return False
            entry.undone.append(entry.edits.pop())
            return True

    def redo(self, name: str) -> bool:
        with self._lock:
            entry = self._get(name)
            if not entry.undone:
                return False
            entry.edits.append(entry.undone.pop())
            return True

    def can_undo_redo(self, name: str) -> tuple[bool, bool]:
        with self._lock:
            entry = self._get(name)
            return bool(entry.edits), bool(entry.undone)


def scenario_store(hub, config: dict):
    """The app's scenario store (created on first use): the database one when there is a database."""
    store = config.get(STORE_CONFIG_KEY)
    if store is None:
        store = _database_store(hub) or MemoryScenarioStore(hub.site_name)
        config[STORE_CONFIG_KEY] = store
    return store


def _database_store(hub):
    """The backend's database store of ``hub``'s site, or None without a database or backend."""
    db = getattr(hub, "db", None)
    if db is None:
        return None
    try:
        from ingest.store import scenarios  # the what-if backend's store, when installed
    except ImportError:
        return None
    return scenarios.ScenarioStore(db, hub.site_name)


# ------------------------------------------------------------------ TOML files
def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise InputError(f"edit value {value!r} cannot be written to TOML")


def export_toml(name: str, edits: list[dict]) -> str:
    """A scenario file: ``[scenario]`` with the name and one ``[[edits]]`` table per edit, in order."""
    lines = ["[scenario]", f"name = {_toml_value(name)}", ""]
    for edit in edits:
        lines.append("[[edits]]")
        lines.append(f"op = {_toml_value(edit['op'])}")
        lines += [f"{key} = {_toml_value(value)}" for key, value in edit.items() if key != "op"]
        lines.append("")
    return "\n".join(lines)


def import_toml(text: str) -> tuple[str, list[dict]]:
    """(name, edits) of a scenario file; :class:`InputError` when it is not one."""
    if len(text.encode("utf-8", "replace")) > MAX_TOML_BYTES:
        raise InputError(f"scenario file is larger than {MAX_TOML_BYTES // 1024} KiB")
    try:
        raw = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise InputError(f"scenario file is not valid TOML: {str(exc)[:120]}") from None
    head = raw.get("scenario", {})
    edits = raw.get("edits", [])
    if not isinstance(head, dict) or not isinstance(edits, list) or not all(isinstance(e, dict) for e in edits):
        raise InputError("scenario file needs a [scenario] table and [[edits]] tables")
    return checked_name(head.get("name", "imported")), [dict(e) for e in edits]
