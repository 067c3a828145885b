"""Where the editor keeps scenarios: named, ordered edit lists with undo and redo.

:func:`scenario_store` gives the app's store: :class:`DatabaseScenarioStore` over
``ingest.store.scenarios`` and the site's database, else (an app without a database,
such as the tests' stand-in) one :class:`MemoryScenarioStore` per app.
Both offer the same methods; a scenario's edits are plain dicts (see
:mod:`dashboard.whatif.edits`).  Export and import use the scenario file's ``[[edits]]``
array, so a file written here opens in the CLI and in a text diff.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field

from dashboard.callbacks.inputs import InputError

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

    def rename_scenario(self, name: str, new: str) -> str:
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


class DatabaseScenarioStore:
    """The scenarios of one site in the database (``ingest.store.scenarios``), by name.

    Every edit is validated again by the store against ``baseline`` before it is written;
    scenarios the editor creates report exceeded design ratings (``design_limits = "warn"``).
    """

    persistent = True

    def __init__(self, engine, site: str, baseline) -> None:
        from ingest.store import scenarios

        self.engine, self.site, self.baseline, self._api = engine, site, baseline, scenarios

    def _find(self, name: str):
        stored = self._api.find_scenario(self.engine, self.site, name) if isinstance(name, str) else None
        if stored is None:
            raise InputError(f"no scenario named {name!r}")
        return stored

    def names(self) -> list[str]:
        return sorted(s.name for s in self._api.list_scenarios(self.engine, self.site))

    def create(self, name: str, edits: list[dict] | None = None) -> str:
        name = checked_name(name)
        if len(self.names()) >= MAX_SCENARIOS:
            raise InputError(f"{MAX_SCENARIOS} scenarios stored already: delete one first")
        stored = _store_call(lambda: self._api.create_scenario(self.engine, self.site, name, design_limits="warn"))
        if edits:
            _store_call(lambda: self._api.append_edits(self.engine, stored.id, list(edits), self.baseline))
        return stored.name

    def rename_scenario(self, name: str, new: str) -> str:
        new = checked_name(new)
        return _store_call(lambda: self._api.rename_scenario(self.engine, self._find(name).id, new)).name

    def duplicate(self, name: str, new: str) -> str:
        new = checked_name(new)
        return _store_call(lambda: self._api.duplicate_scenario(self.engine, self._find(name).id, new)).name

    def delete(self, name: str) -> None:
        _store_call(lambda: self._api.delete_scenario(self.engine, self._find(name).id))

    def edits(self, name: str) -> list[dict]:
        return [e.as_dict() for e in self._find(name).applied]

    def push(self, name: str, edit: dict) -> None:
        """Append an edit (the store validates the list with it on the baseline; the redo stack is dropped)."""
        _store_call(lambda: self._api.append_edit(self.engine, self._find(name).id, edit, self.baseline))

    def undo(self, name: str) -> bool:
        stored = self._find(name)
        if not stored.can_undo:
            return False
        self._api.undo(self.engine, stored.id)
        return True

    def redo(self, name: str) -> bool:
        stored = self._find(name)
        if not stored.can_redo:
            return False
        self._api.redo(self.engine, stored.id)
        return True

    def can_undo_redo(self, name: str) -> tuple[bool, bool]:
        stored = self._find(name)
        return stored.can_undo, stored.can_redo


def _store_call(call):
    """Run a store operation; its refusals (duplicate names, invalid edits) become the page's InputError."""
    from twin.errors import InputError as TwinInputError

    try:
        return call()
    except TwinInputError as exc:
        raise InputError(str(exc)) from None


def scenario_store(live, db, config: dict):
    """The app's scenario store (created on first use) for the site of the ``live`` view: in ``db`` when given."""
    store = config.get(STORE_CONFIG_KEY)
    if store is None:
        store = (
            DatabaseScenarioStore(db, live.site_name, live.state)
            if db is not None
            else MemoryScenarioStore(live.site_name)
        )
        config[STORE_CONFIG_KEY] = store
    return store


# ------------------------------------------------------------------ TOML files
def export_toml(name: str, edits: list[dict]) -> str:
    """The scenario file of ``edits`` (``[scenario]`` and one ``[[edits]]`` table per edit, in order)."""
    from twin.scenario.conditions import ScenarioDoc
    from twin.scenario.writer import export_scenario_toml
    from twin.site.edits import parse_edits

    return export_scenario_toml(ScenarioDoc(name=name, design_limits="warn"), parse_edits(edits))


def import_toml(text: str) -> tuple[str, list[dict]]:
    """(name, edits) of a scenario file; :class:`InputError` naming what is wrong when it is not one."""
    from twin.errors import InputError as TwinInputError
    from twin.scenario.conditions import parse_scenario_doc

    if len(text.encode("utf-8", "replace")) > MAX_TOML_BYTES:
        raise InputError(f"scenario file is larger than {MAX_TOML_BYTES // 1024} KiB")
    try:
        doc = parse_scenario_doc(text, "imported.toml")
    except TwinInputError as exc:
        raise InputError(str(exc)) from None
    return checked_name(doc.name or "imported"), [e.as_dict() for e in doc.edits]
