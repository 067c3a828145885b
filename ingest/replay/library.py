"""The incident library: shipped incidents in ``data/incidents``, the user's in ``var/incidents``.

The user's directory comes from ``--dir``, else ``CLUSTERTWIN_INCIDENTS``, else
``var/incidents`` under the working directory (next to the embedded database).  Imports
are validated completely — the bundle itself (:func:`ingest.replay.bundle.read_bundle`) and
its tables against its own site file — before anything is written, and then land with one
atomic rename: a refused file leaves the library as it was.
"""

from __future__ import annotations

import contextvars
import json
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from ingest.replay.bundle import (
    EVENT_SEVERITIES,
    ID_COLUMNS,
    SUFFIX,
    Bundle,
    BundleError,
    bundle_bytes,
    check_name,
    read_bundle,
    read_metadata,
)
from twin.cache import BoundedCache
from twin.site.catalogue import DATA_DIR, load_catalogue
from twin.site.errors import SiteError
from twin.site.load import build_site
from twin.site.tables import SiteTables

SHIPPED_DIR = DATA_DIR / "incidents"
DEFAULT_USER_DIR = Path("var") / "incidents"


class IncidentExists(BundleError):
    """An incident of that name is stored already (and replacing it was not asked for)."""


_SWEPT: set[str] = set()


def user_dir(path: str | Path | None = None) -> Path:
    """The user's incident directory (created): ``path``, else ``$CLUSTERTWIN_INCIDENTS``, else var/incidents.

    The first time a process uses a directory, temporary files of killed imports are swept
    (:func:`sweep_staging`).
    """
    out = Path(path or os.environ.get("CLUSTERTWIN_INCIDENTS") or DEFAULT_USER_DIR)
    out.mkdir(parents=True, exist_ok=True)
    key = str(out.resolve())
    if key not in _SWEPT:
        _SWEPT.add(key)
        sweep_staging(out)
    return out


@dataclass
class IncidentEntry:
    """One incident of the library, as listed."""

    name: str
    title: str
    site_name: str
    start: str
    end: str
    tags: list[str]
    path: Path
    shipped: bool

    def as_dict(self) -> dict:
        return {**self.__dict__, "path": str(self.path)}


def list_incidents(directory: Path | None = None, rows=()) -> list[IncidentEntry]:
    """Every readable incident of the user's directory and the shipped one (user first on a name clash).

    Only each bundle's metadata is read (:func:`bundle_metadata`), never its tables: from
    the database row of an import while the file is unchanged, else from a per-process
    cache keyed by file, size and modification time, else from the archive's
    ``metadata.json`` alone.  ``rows``: :class:`ingest.store.models.Incident` rows.
    """
    return [entry for entry, _meta in _scan(directory, rows)]


def _scan(directory: Path | None, rows) -> list[tuple[IncidentEntry, dict]]:
    by_file = {row.bundle_file: row for row in rows if getattr(row, "bundle_file", None)}
    out: dict[str, tuple[IncidentEntry, dict]] = {}
    for folder, shipped in ((user_dir(directory), False), (SHIPPED_DIR, True)):
        for path in sorted(folder.glob(f"*{SUFFIX}")):
            meta = bundle_metadata(path, None if shipped else by_file.get(path.name))
            if meta is None:
                continue
            entry = IncidentEntry(
                meta["name"], meta["title"], meta["site_name"], meta["start"], meta["end"], meta["tags"], path, shipped
            )
            out.setdefault(meta["name"], (entry, meta))
    return sorted(out.values(), key=lambda pair: (pair[0].site_name, pair[0].start, pair[0].name))


META_CACHE_SIZE = 1024
_metadata: BoundedCache[dict | None] = BoundedCache(META_CACHE_SIZE)  # (file, size, mtime) → metadata or None


def bundle_metadata(path: Path, row=None) -> dict | None:
    """A bundle file's metadata (None when it cannot be read), without reading its tables.

    ``row``: the file's :class:`~ingest.store.models.Incident` row, used while the file's size
    and modification time are the ones it recorded.  Results (refusals too) are cached per
    (file, size, modification time), at most :data:`META_CACHE_SIZE` of them.
    """
    try:
        stat = path.stat()
    except OSError:
        return None
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    return _metadata.get_or_make(key, lambda: _read_metadata(path, row, stat))


def _read_metadata(path: Path, row, stat) -> dict | None:
    meta = _row_metadata(row, stat)
    if meta is None:
        try:
            meta = read_metadata(path)
        except BundleError:
            meta = None
    return meta


def _row_metadata(row, stat) -> dict | None:
    if row is None or row.metadata_json is None:
        return None
    if row.bundle_bytes != stat.st_size or row.bundle_mtime_ns != stat.st_mtime_ns:
        return None
    try:
        meta = json.loads(row.metadata_json)
        check_name(meta.get("name"))
    except (ValueError, AttributeError):
        return None
    return meta if all(k in meta for k in ("name", "title", "site_name", "start", "end", "tags")) else None


def kept_where(entry: dict) -> str:
    """Where a :func:`library_entries` entry lives: ``shipped file``/``library file``, ``+ database``, or ``database``."""
    parts = ["shipped file" if entry["shipped"] else "library file"] if entry["file"] else []
    return " + ".join(parts + (["database"] if entry["in_database"] else []))


def library_entries(directory: Path | None = None, rows=()) -> list[dict]:
    """Every incident of the library: bundle files (:func:`list_incidents`) and the database's rows.

    ``rows`` are :class:`ingest.store.models.Incident` rows (site, name, title, window).
    Each entry holds the bundle's metadata (a database row: its name, site, title and
    window) and says where it lives: ``file`` (with ``shipped`` and ``path``),
    ``in_database``, and ``kept`` (:func:`kept_where`).  A row whose bundle is not in the
    library is listed but cannot be replayed.  Files first (by site, start, name), then
    rows without a file.
    """
    rows = list(rows)
    by_key = {(row.site_name, row.name): row for row in rows}
    out = []
    for entry, meta in _scan(directory, rows):
        known = by_key.pop((meta["site_name"], meta["name"]), None) is not None
        out.append({**meta, "path": str(entry.path), "shipped": entry.shipped, "file": True, "in_database": known})
    for row in sorted(by_key.values(), key=lambda r: (r.site_name, r.start_at, r.name)):
        out.append(
            {
                "name": row.name,
                "title": row.description or row.name,
                "site_name": row.site_name,
                "start": row.start_at.isoformat(),
                "end": (row.end_at or row.start_at).isoformat(),
                "tags": [],
                "notes": "Recorded in the database; its bundle file is not in the library, so it cannot be "
                "replayed here.",
                "path": None,
                "shipped": False,
                "file": False,
                "in_database": True,
            }
        )
    for entry in out:
        entry["kept"] = kept_where(entry)
    return out


def find_incident(name_or_path: str, directory: Path | None = None) -> Path:
    """The bundle file of an incident name (user's, then shipped) or an existing path."""
    path = Path(name_or_path)
    if path.suffix == SUFFIX and path.exists():
        return path
    for folder in (user_dir(directory), SHIPPED_DIR):
        candidate = folder / f"{name_or_path}{SUFFIX}"
        if candidate.exists():
            return candidate
    raise KeyError(f"no incident named {name_or_path!r} (see `clustertwin incidents list`)")


def library_path(name: str, directory: Path | None = None) -> Path:
    """Where the user's incident ``name`` is stored; :class:`BundleError` for a name that would lead elsewhere."""
    folder = user_dir(directory)
    check_name(name)
    dest = folder / f"{name}{SUFFIX}"
    if dest.resolve().parent != folder.resolve():
        raise BundleError(f"incident name {name[:80]!r} is not a plain file name")
    return dest


def bundle_site(bundle: Bundle) -> SiteTables:
    """The site a bundle was recorded on, built from the site file it carries."""
    try:
        return build_site(bundle.site_toml, f"{bundle.name}:site.toml", load_catalogue())
    except SiteError as exc:
        raise BundleError(f"{bundle.name}: its site file does not load ({exc})") from None


def check_against_site(bundle: Bundle, state: SiteTables) -> None:
    """Entity ids and counts of every table fit ``state``; times lie in the window, frames are complete."""
    counts = {
        "gpu": state.n_gpus,
        "rack": state.n_racks,
        "cdu": state.n_cdus,
        "power": state.n_power,
        "source": state.n_sources,
        "loop": len(state.loop_name),
    }
    site = bundle.frame("site")
    n_frames = len(site)
    if n_frames == 0:
        raise BundleError(f"{bundle.name}: the recording holds no frame")
    if bundle.metadata["site_name"] != state.name:
        raise BundleError(
            f"{bundle.name}: metadata names site {bundle.metadata['site_name']!r}, its site file is {state.name!r}"
        )
    times = set(bundle.tables["site"].column("ts").cast("int64").to_pylist())
    for table, column in ID_COLUMNS.items():
        t = bundle.tables.get(table)
        if t is None or t.num_rows == 0:
            continue
        ids = t.column(column).to_numpy()
        if ids.min() < 0 or ids.max() >= counts[table]:
            raise BundleError(
                f"{bundle.name}: table {table} names {column} {int(ids.max())}, the site has "
                f"{counts[table]} {table} entities"
            )
        ts = t.column("ts").cast("int64").to_numpy()
        if not set(np.unique(ts).tolist()) <= times:
            raise BundleError(f"{bundle.name}: table {table} has instants that are not frames of the site table")
        if table in ("rack", "cdu") and t.num_rows != n_frames * counts[table]:
            raise BundleError(
                f"{bundle.name}: table {table} has {t.num_rows} rows, expected {n_frames} frames × "
                f"{counts[table]} entities"
            )
    events = bundle.tables.get("events")
    if events is not None and events.num_rows:
        unknown = set(events.column("severity").to_pylist()) - set(EVENT_SEVERITIES)
        if unknown:
            raise BundleError(
                f"{bundle.name}: events name severity {sorted(map(str, unknown))[0]!r}, "
                f"expected one of {', '.join(EVENT_SEVERITIES)}"
            )
    _check_jobs(bundle, state.n_racks)
    links = max((max(x) for x in site["failed_links"] if len(x)), default=-1)
    if links >= state.link_a.size:
        raise BundleError(f"{bundle.name}: failed link id {links} is beyond the site's {state.link_a.size} links")


def _check_jobs(bundle: Bundle, n_racks: int) -> None:
    """The jobs table names racks of the site and spans within the window."""
    jobs = bundle.tables.get("jobs")
    if jobs is None or jobs.num_rows == 0:
        return
    racks = jobs.column("rack_ids").combine_chunks().flatten().to_numpy()
    if racks.size and (racks.min() < 0 or racks.max() >= n_racks):
        raise BundleError(f"{bundle.name}: table jobs names rack {int(racks.max())}, the site has {n_racks} racks")
    first = jobs.column("first_ts").cast("int64").to_numpy()
    last = jobs.column("last_ts").cast("int64").to_numpy()
    if (last < first).any():
        raise BundleError(f"{bundle.name}: table jobs has a job whose last_ts is before its first_ts")


def validate(bundle: Bundle) -> SiteTables:
    """Full validation of a loaded bundle against its own site; returns that site."""
    state = bundle_site(bundle)
    check_against_site(bundle, state)
    return state


def import_file(source: Path, directory: Path | None = None, *, name: str | None = None, replace: bool = False) -> Path:
    """Validate ``source`` and add it to the user's library (as ``name`` if given); returns the stored path."""
    return import_bundle_file(source, directory, name=name, replace=replace)[0]


# What runs between writing a bundle under its temporary name and renaming it into place (see land()).
_BEFORE_RENAME: contextvars.ContextVar = contextvars.ContextVar("before_rename", default=None)
STAGING_MARK = ".importing-"  # temporary bundles: .<name>.ctincident.importing-<pid>
STALE_STAGING_S = 3600.0


@contextmanager
def before_rename(callback):
    """Run ``callback(path, metadata)`` after a bundle stored in this context is written, before it lands.

    The bundle is fully written and synced under a temporary name first; ``callback`` (the
    incident's database row and audit entry) commits; only then is the file renamed into
    the library.  A process killed at any point leaves either nothing, or a temporary file
    (removed by :func:`sweep_staging`), or — after the commit — the row and the entry while
    the rename is still to come, never a library file without its row and audit entry.  An
    exception from ``callback`` removes the temporary file: nothing is stored.
    """
    token = _BEFORE_RENAME.set(callback)
    try:
        yield
    finally:
        _BEFORE_RENAME.reset(token)


def land(dest: Path, data: bytes, metadata: dict) -> Path:
    """Store ``data`` at ``dest`` through a synced temporary file, the :func:`before_rename` callback, a rename."""
    staging = dest.with_name(f".{dest.name}{STAGING_MARK}{os.getpid()}")
    try:
        with open(staging, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        callback = _BEFORE_RENAME.get()
        if callback is not None:
            callback(staging, metadata)
        os.replace(staging, dest)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise
    dir_fd = os.open(dest.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return dest


def sweep_staging(folder: Path) -> list[Path]:
    """Remove temporary bundles left by killed imports: their process is gone, or they are over an hour old."""
    removed = []
    for path in folder.glob(f".*{SUFFIX}{STAGING_MARK}*"):
        pid = path.name.rpartition(STAGING_MARK)[2]
        try:
            alive = pid.isdigit() and int(pid) != os.getpid() and _running(int(pid))
            stale = time.time() - path.stat().st_mtime > STALE_STAGING_S
        except OSError:
            continue
        if not alive or stale:
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def import_bundle_file(
    source: Path, directory: Path | None = None, *, name: str | None = None, replace: bool = False
) -> tuple[Path, dict, bool]:
    """:func:`import_file`, also returning the stored metadata and whether it replaced an incident."""
    bundle = read_bundle(source)
    validate(bundle)
    target_name = name or bundle.name
    dest = library_path(target_name, directory)
    replaced = dest.exists()
    if replaced and not replace:
        raise IncidentExists(f"an incident named {target_name!r} is already stored (choose --name or --replace)")
    if name and name != bundle.name:
        bundle.metadata["name"] = name
        data = bundle_bytes(bundle)
    else:
        data = Path(source).read_bytes()
    land(dest, data, bundle.metadata)
    return dest, bundle.metadata, replaced


def store_bundle(bundle: Bundle, directory: Path | None = None, *, replace: bool = False) -> Path:
    """Validate a bundle built in memory (an import from another format) and store it."""
    validate(bundle)
    dest = library_path(bundle.name, directory)
    if dest.exists() and not replace:
        raise IncidentExists(f"an incident named {bundle.name!r} is already stored (choose --name or --replace)")
    return land(dest, bundle_bytes(bundle), bundle.metadata)


def window_of(bundle: Bundle) -> tuple[datetime, datetime]:
    return datetime.fromisoformat(bundle.metadata["start"]), datetime.fromisoformat(bundle.metadata["end"])
