"""API routes of the incident library: list, show, download a bundle by its name, and import one.

A bundle is found by its exact name among the listed incidents, never by a path built
from the request: names are restricted to letters, digits and ``._:@+-`` (no ``/``),
and the file served is one the library listed.

``POST /incidents/import`` takes the file as the request body (its own size cap,
streamed to a temporary file: :mod:`dashboard.api.uploads`) and stores it exactly as
``clustertwin incidents import`` does (:func:`ingest.replay.intake.import_incident`: the
whole file validated first, nothing stored when it is refused).  A recording of another
system is one file (its host named by ``host``) or a zip of files, each named after its
host; member names are reduced to a plain file name, so none can point outside the
temporary directory.  Prometheus history is pulled from a server by the command line
only: a server that fetched URLs for its callers could be pointed at hosts they cannot
reach themselves.
"""

from __future__ import annotations

import re
import shutil
import zipfile
import zlib
from pathlib import Path, PurePosixPath

import flask

from dashboard.api import models as m
from dashboard.api.access import audit
from dashboard.api.routing import ApiError, NotFound, Unprocessable, api
from dashboard.api.uploads import received_upload, upload_cap_bytes
from dashboard.views.context import site_db
from ingest.replay.bundle import BundleError
from ingest.replay.intake import ImportRequest, audit_state_of, import_incident, record_in_database, replaces
from ingest.replay.library import IncidentExists, library_path, list_incidents
from twin.errors import InputError
from twin.site.load import SITES_DIR

SUFFIXES = {
    "bundle": ".ctincident",
    "nvidia-smi-csv": ".csv",
    "nvidia-smi-xml": ".xml",
    "dcgmi-dmon": ".log",
    "mlperf-power": ".txt",
}
MAX_MEMBERS = 4096
MEMBER_NAME = re.compile(r"^[A-Za-z0-9][\w.-]{0,200}$")


def _entries() -> list:
    """The library's incidents; the database's rows spare reading the metadata of imported bundles."""
    from sqlalchemy.exc import SQLAlchemyError

    from ingest.store.incidents import stored_incidents

    engine = site_db()
    try:
        rows = stored_incidents(engine) if engine is not None else []
    except SQLAlchemyError:
        rows = []
    return list_incidents(rows=rows)


def _entry_model(e) -> m.IncidentEntry:
    return m.IncidentEntry(
        name=e.name, title=e.title, site=e.site_name, start=e.start, end=e.end, tags=e.tags, shipped_flag=e.shipped
    )


def _find(name: str):
    for entry in _entries():
        if entry.name == name:
            return entry
    raise NotFound(f"no incident named {name!r}")


@api.route(
    "GET",
    "/incidents",
    summary="Recorded incidents of the library (the user's and the shipped ones)",
    tag="incidents",
    query=m.Page,
    response=m.IncidentPage,
)
def list_library(query: m.Page = m.Page()) -> m.IncidentPage:
    entries = _entries()
    return m.IncidentPage(
        total_count=len(entries),
        offset=query.offset,
        limit=query.limit,
        items=[_entry_model(e) for e in entries[query.offset : query.offset + query.limit]],
    )


@api.route(
    "GET",
    "/incidents/{name}",
    summary="One incident's metadata",
    tag="incidents",
    params=m.NameParam,
    response=m.IncidentEntry,
    errors=(404,),
)
def get_incident(params: m.NameParam) -> m.IncidentEntry:
    return _entry_model(_find(params.name))


@api.route(
    "GET",
    "/incidents/{name}/export",
    summary="Download an incident's bundle (.ctincident, a zip)",
    tag="incidents",
    params=m.NameParam,
    media_type="application/zip",
    errors=(404,),
)
def export_incident(params: m.NameParam) -> flask.Response:
    entry = _find(params.name)
    return flask.send_file(
        entry.path, mimetype="application/zip", as_attachment=True, download_name=entry.path.name, max_age=0
    )


def _reference_sites() -> list[str]:
    return sorted(p.stem for p in SITES_DIR.glob("*.toml"))


def _unpack(archive: Path, folder: Path) -> Path:
    """The files of a zip of recordings in ``folder`` (plain names only, bounded in count and size)."""
    cap = upload_cap_bytes()
    folder.mkdir()
    try:
        with zipfile.ZipFile(archive) as zf:
            members = [i for i in zf.infolist() if not i.is_dir()]
            if not members:
                raise Unprocessable("the zip holds no file")
            if len(members) > MAX_MEMBERS:
                raise Unprocessable(f"the zip holds {len(members)} files, at most {MAX_MEMBERS}")
            if sum(i.file_size for i in members) > cap:
                raise ApiError(413, f"the zip's files add up to more than the {cap} bytes this route takes")
            for info in members:
                name = PurePosixPath(info.filename.replace("\\", "/")).name
                if not MEMBER_NAME.match(name):
                    raise Unprocessable(
                        f"zip member {info.filename[:80]!r}: name it after its host (letters, digits, . _ -)"
                    )
                target = folder / name
                if target.exists():
                    raise Unprocessable(f"zip member {name!r} appears twice")
                with zf.open(info) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out, 2**20)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, zlib.error) as exc:
        raise Unprocessable(f"the zip of recordings is damaged ({exc})") from None
    return folder


def _check_query(query: m.ImportQuery) -> None:
    if query.format != "bundle" and query.site != "auto" and query.site not in _reference_sites():
        raise ApiError(
            400, f"query.site: no reference site {query.site!r} (sites: auto, {', '.join(_reference_sites())})"
        )
    if query.format == "dcgmi-dmon" and query.start is None:
        raise ApiError(400, "query.start: a dcgmi dmon recording needs its start (ISO 8601 with a zone)")
    if query.start is not None and query.start.tzinfo is None:
        raise ApiError(400, "query.start: needs a time zone, e.g. 2024-07-22T15:00:00Z")
    if query.name and not query.replace:
        try:
            taken = library_path(query.name).exists()
        except BundleError as exc:
            raise ApiError(400, f"query.name: {exc}") from None
        if taken:
            raise ApiError(
                409, f"an incident named {query.name!r} is already stored (choose another name or replace=true)"
            )


@api.route(
    "POST",
    "/incidents/import",
    summary="Import an incident: a bundle (.ctincident) or a recording file",
    role="operator",
    tag="incidents",
    query=m.ImportQuery,
    response=m.ImportedIncident,
    errors=(409, 422),
    upload=True,
)
def import_upload(query: m.ImportQuery = m.ImportQuery()) -> m.ImportedIncident:
    _check_query(query)
    db = site_db()
    filename = ("upload" if query.format == "bundle" else query.host) + SUFFIXES[query.format]
    with received_upload(filename) as path:
        source = path
        if query.format != "bundle" and zipfile.is_zipfile(path):
            source = _unpack(path, path.parent / "recording")
        request = ImportRequest(
            source=str(source),
            format=query.format,
            site=query.site,
            name=query.name,
            replace=query.replace,
            start=query.start.isoformat() if query.start else None,
            step=query.step_s,
            engine=db,
        )

        def before_land(staging, metadata) -> None:  # the row and the audit entry commit before the file lands
            replaced = replaces(metadata, None)
            if db is not None:
                record_in_database(db, metadata, path=staging)
            audit(
                "incident.import",
                f"incident {metadata['name']}",
                {"replaced": True} if replaced else None,
                {**audit_state_of(staging, metadata), "format": query.format},
            )

        try:
            done = import_incident(request, before_land=before_land)
        except IncidentExists as exc:
            raise ApiError(409, str(exc)) from None
        except (BundleError, InputError, ValueError) as exc:
            raise Unprocessable(str(exc).replace(str(path.parent), "upload")) from None
        except OSError as exc:
            raise Unprocessable(f"the upload cannot be read ({exc.strerror or exc})") from None
        state = done.audit_state()
    return m.ImportedIncident(
        name=done.name,
        site=state["site"],
        start=state["start"],
        end=state["end"],
        replaced=done.replaced,
        skipped=[str(x) for x in done.report.get("skipped", [])],
    )
