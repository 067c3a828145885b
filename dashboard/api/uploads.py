"""File uploads to the API: the raw request body streamed to a temporary file under its own size cap.

The API's JSON bodies are capped at 1 MB (:data:`dashboard.api.routing.MAX_BODY_BYTES`);
a route that takes a file (an incident bundle, a recording) has the upload cap instead,
256 MiB unless the app's config ``CLUSTERTWIN_API_UPLOAD_MAX_BYTES`` or the environment's
``CLUSTERTWIN_API_UPLOAD_MAX_MB`` says otherwise.  The body is the file's bytes as they
are (``curl --data-binary @file -H 'Content-Type: application/octet-stream'``; any content
type but a form's, ``text/plain`` or none, the types a page of another site could send
without a CORS preflight): a declared length over
the cap is refused with 413 before a byte is read, and a body without a declared length
(chunked) is refused as soon as it passes the cap.  The bytes go to disk in 1 MiB chunks,
never into memory whole, and the temporary directory is removed when the request ends.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import flask
from werkzeug.exceptions import ClientDisconnected, RequestEntityTooLarge

from dashboard.api.routing import ApiError

MAX_BYTES_CONFIG = "CLUSTERTWIN_API_UPLOAD_MAX_BYTES"
MAX_MB_ENV = "CLUSTERTWIN_API_UPLOAD_MAX_MB"
DEFAULT_MAX_BYTES = 256 * 2**20
CHUNK_BYTES = 2**20
FORM_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")
# the types a page of another site can send without asking first (a CORS "simple request"), and none
SIMPLE_TYPES = (*FORM_TYPES, "text/plain", "")


def upload_cap_bytes(app: flask.Flask | None = None) -> int:
    """The largest upload accepted, in bytes (config, else environment in MiB, else 256 MiB)."""
    app = app or flask.current_app
    configured = app.config.get(MAX_BYTES_CONFIG)
    if configured is not None:
        return int(configured)
    env = os.environ.get(MAX_MB_ENV, "").strip()
    if env:
        try:
            megabytes = float(env)
        except ValueError:
            raise ValueError(f"{MAX_MB_ENV}={env[:40]!r}: expected a number of MiB") from None
        if not 0 < megabytes <= 64 * 1024:
            raise ValueError(f"{MAX_MB_ENV}={env[:40]!r}: expected more than 0 and at most 65536 MiB")
        return int(megabytes * 2**20)
    return DEFAULT_MAX_BYTES


def allow_upload_size() -> None:
    """Raise the request's size limit to the upload cap (before anything reads the body, e.g. a CSRF check)."""
    flask.request.max_content_length = upload_cap_bytes()


@contextmanager
def received_upload(filename: str = "upload") -> Iterator[Path]:
    """The request body written to ``<temporary directory>/<filename>``; the directory is removed afterwards.

    Raises :class:`ApiError` 413 (over the cap), 415 (a form, not a file) or 400 (empty, cut off).
    """
    request = flask.request
    cap = upload_cap_bytes()
    length = request.content_length
    if length is not None and length > cap:
        raise ApiError(413, f"upload of {length} bytes is larger than the {cap} bytes this route takes")
    if request.mimetype in SIMPLE_TYPES:
        raise ApiError(
            415,
            "send the file's bytes as the body with a Content-Type such as application/octet-stream "
            f"(curl --data-binary @FILE -H 'Content-Type: application/octet-stream'), not "
            f"{request.mimetype or 'untyped'}",
        )
    request.max_content_length = cap
    folder = Path(tempfile.mkdtemp(prefix="clustertwin-upload-"))
    try:
        target = folder / filename
        total = 0
        try:
            with open(target, "wb") as out:
                while chunk := request.stream.read(CHUNK_BYTES):
                    total += len(chunk)
                    if total > cap:
                        raise ApiError(413, f"upload is larger than the {cap} bytes this route takes")
                    out.write(chunk)
        except RequestEntityTooLarge:
            raise ApiError(413, f"upload is larger than the {cap} bytes this route takes") from None
        except ClientDisconnected:
            raise ApiError(400, "the upload was cut off before its end") from None
        if total == 0:
            raise ApiError(400, "empty body: send the file's bytes (e.g. curl --data-binary @FILE)")
        if length is not None and total != length:
            raise ApiError(400, f"the upload was cut off: {total} of {length} bytes arrived")
        yield target
    finally:
        shutil.rmtree(folder, ignore_errors=True)
