"""API routes of the incident library: list, show, and download a bundle by its name.

A bundle is found by its exact name among the listed incidents, never by a path built
from the request: names are restricted to letters, digits and ``._:@+-`` (no ``/``),
and the file served is one the library listed.
"""

from __future__ import annotations

import flask

from dashboard.api import models as m
from dashboard.api.routing import api
from ingest.replay.library import list_incidents


def _entries() -> list:
    return list_incidents()


def _entry_model(e) -> m.IncidentEntry:
    return m.IncidentEntry(name=e.name, title=e.title, site=e.site_name, start=e.start, end=e.end, tags=e.tags,
                           shipped_flag=e.shipped)


def _find(name: str):
    for entry in _entries():
        if entry.name == name:
            return entry
    raise KeyError(f"no incident named {name!r}")


@api.route("GET", "/incidents", summary="Recorded incidents of the library (the user's and the shipped ones)",
           tag="incidents", query=m.Page, response=m.IncidentPage)
def list_library(query: m.Page = m.Page()) -> m.IncidentPage:
    entries = _entries()
    return m.IncidentPage(total_count=len(entries), offset=query.offset, limit=query.limit,
                          items=[_entry_model(e) for e in entries[query.offset:query.offset + query.limit]])


@api.route("GET", "/incidents/{name}", summary="One incident's metadata", tag="incidents", params=m.NameParam,
           response=m.IncidentEntry, errors=(404,))
def get_incident(params: m.NameParam) -> m.IncidentEntry:
    return _entry_model(_find(params.name))


@api.route("GET", "/incidents/{name}/export", summary="Download an incident's bundle (.ctincident, a zip)",
           tag="incidents", params=m.NameParam, media_type="application/zip", errors=(404,))
def export_incident(params: m.NameParam) -> flask.Response:
    entry = _find(params.name)
    return flask.send_file(entry.path, mimetype="application/zip", as_attachment=True,
                           download_name=entry.path.name, max_age=0)
