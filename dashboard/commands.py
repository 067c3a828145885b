"""The ``serve`` command: run the live twin of a site and its operator dashboard in one process."""

from __future__ import annotations

import argparse
import logging
import os

from twin.cli import EXIT_BAD_INPUT

# the access layer's default (dashboard.auth.settings, checked by a test); not imported here, so that
# building the clustertwin parser does not load the access layer and the database stack
DEFAULT_SESSION_IDLE_H = 12.0

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
TRUSTED_PROXIES_ENV = "CLUSTERTWIN_TRUSTED_PROXIES"
MAX_TRUSTED_PROXIES = 5
DEFAULT_PORT = 8050
APP_LOAD_ERROR = 4  # gunicorn's exit code when the app did not load (the worker printed why)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``serve`` to the ``clustertwin`` sub-commands."""
    parser = subparsers.add_parser(
        "serve",
        help="run the live twin and the dashboard",
        description="Start ingest and the twin for a site (in this process) and serve the operator dashboard. "
        "Per site and shard only the holder of the ingest lease in the database runs ingest (lease 15 s, "
        "renewed every 5 s); other processes follow its live state through the database (no twin work of "
        "their own, acknowledgements shared) and one of them takes over within 20 s if the leader dies "
        "(5 s if it stops cleanly). With --follow this process only follows, never leads.",
    )
    parser.add_argument("--site", default="demo", help="reference site name or site file path (default: demo)")
    parser.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help=f"address to listen on (default: {DEFAULT_HOST}); any non-loopback address needs at "
        "least one user (clustertwin users add)",
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"TCP port (default: {DEFAULT_PORT})")
    parser.add_argument(
        "--db",
        default=None,
        metavar="URL",
        help="database URL (default: $CLUSTERTWIN_DB, else the embedded SQLite file)",
    )
    parser.add_argument(
        "--source",
        action="append",
        default=None,
        metavar="SPEC",
        help="'synthetic' or KIND=TARGET[#HOST] with KIND dcgm, prometheus, redfish, ipmi or slurm; "
        "repeatable (default: synthetic)",
    )
    parser.add_argument(
        "--fault",
        action="append",
        default=None,
        metavar="SPEC",
        help="fault injected into the synthetic source, repeatable",
    )
    parser.add_argument(
        "--alertmanager",
        default=None,
        metavar="URL",
        help="post the open alert episodes to this Prometheus Alertmanager (API v2), e.g. "
        "http://127.0.0.1:9093; every post has a 5 s deadline and a 1 MiB cap, a failing receiver "
        "is logged once per outage and never stops the tick",
    )
    parser.add_argument(
        "--webhook",
        default=None,
        metavar="URL",
        help="post every change of the open alert episodes as JSON to this URL (same limits)",
    )
    parser.add_argument(
        "--public-url",
        default=None,
        metavar="URL",
        help="the dashboard's address as its users reach it, e.g. https://twin.example.org behind a reverse "
        "proxy: the links in notifications point there (default: http://HOST:PORT of this server)",
    )
    parser.add_argument(
        "--record-every-s", type=float, default=5.0, help="seconds between stored full-site frames (default: 5)"
    )
    parser.add_argument("--retention-h", type=float, default=1.0, help="hours of frames kept (default: 1)")
    parser.add_argument(
        "--follow",
        action="store_true",
        help="never run ingest here: show the live state of the leader (e.g. 'clustertwin ingest "
        "run') on the same database",
    )
    parser.add_argument(
        "--tick-ms", type=int, default=2000, help="dashboard live-update period in ms, ≤ 2000 (default: 2000)"
    )
    parser.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="serve on a non-loopback --host although no user exists (anyone reaching it can change "
        "state); logged loudly",
    )
    parser.add_argument(
        "--session-idle-h",
        type=float,
        default=DEFAULT_SESSION_IDLE_H,
        help=f"hours a login session may stay unused before it ends (default: {DEFAULT_SESSION_IDLE_H:g})",
    )
    parser.add_argument(
        "--secure-cookies",
        action="store_true",
        help="always mark cookies Secure (without it they are Secure when a request came over "
        "HTTPS, as a trusted proxy forwards it)",
    )
    parser.add_argument(
        "--trusted-proxies",
        type=int,
        default=None,
        metavar="N",
        help=f"reverse proxies in front of the server to trust, 0..{MAX_TRUSTED_PROXIES}: the client "
        "address (login limits, audit log) and scheme (Secure cookies over HTTPS) are taken "
        "from N hops of X-Forwarded-For and X-Forwarded-Proto; with 0 those headers are ignored "
        f"(default: ${TRUSTED_PROXIES_ENV}, else 0); see docs/security.md",
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        metavar="NAME",
        help="a host name requests may give in their Host header besides the --host address (and, on "
        "loopback, localhost): the name a reverse proxy forwards or users type; repeatable; other "
        "names get HTTP 421 (DNS rebinding); see docs/security.md",
    )
    parser.add_argument(
        "--prod",
        action="store_true",
        help="serve with gunicorn (gthread worker) instead of Flask's development server; see docs/deploy.md",
    )
    parser.add_argument(
        "--threads", type=int, default=16, help="--prod: request threads of the worker, 1..256 (default: 16)"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="--prod: gunicorn worker processes, 1..16; one leads (or all follow with --follow), "
        "the others follow it through the database (default: 1)",
    )
    parser.set_defaults(func=serve)


def serve(args: argparse.Namespace) -> int:
    """Start the hub, build the app and serve until interrupted."""
    if not 100 <= args.tick_ms <= 2000:
        raise SystemExit(f"--tick-ms {args.tick_ms}: expected 100..2000 ms")
    if not 0 < args.session_idle_h <= 24 * 30:
        raise SystemExit(f"--session-idle-h {args.session_idle_h:g}: expected more than 0 and at most 720 h")
    args.trusted_proxies = trusted_proxies(args.trusted_proxies)
    _check_binding(args)
    if args.prod:
        return _serve_prod(args)
    runtime = _start_runtime(args)
    try:
        app = _create_app(args, runtime)
        app.run(host=args.host, port=args.port, debug=False, use_reloader=False, threaded=True)
    finally:
        _stop(runtime)
    return 0


def _stop(runtime) -> None:
    """Stop the twin's runtime and the fleet what-if's side processes (a side under way is dropped)."""
    from dashboard.whatif.fleet_runs import WORKER

    runtime.stop()
    WORKER.close(now=True)


def trusted_proxies(flag: int | None) -> int:
    """The number of trusted proxy hops: ``flag``, else ``$CLUSTERTWIN_TRUSTED_PROXIES``, else 0; checked."""
    source, value = "--trusted-proxies", flag
    if value is None:
        source, text = f"${TRUSTED_PROXIES_ENV}", os.environ.get(TRUSTED_PROXIES_ENV, "0").strip() or "0"
        if not text.isdigit():
            raise SystemExit(f"{source} {text[:40]!r}: expected a whole number 0..{MAX_TRUSTED_PROXIES}")
        value = int(text)
    if not 0 <= value <= MAX_TRUSTED_PROXIES:
        raise SystemExit(
            f"{source} {value}: expected 0..{MAX_TRUSTED_PROXIES} (the reverse proxies in front of the server)"
        )
    return value


def _start_runtime(args: argparse.Namespace):
    from ingest.live.runtime import LiveSetupError, start_hub
    from ingest.synthetic.faults import FaultError

    sources = tuple(args.source or ("synthetic",))
    try:
        runtime = start_hub(
            args.site,
            args.db,
            sources,
            faults=tuple(args.fault or ()),
            record_every_s=args.record_every_s,
            retention_s=args.retention_h * 3600.0,
            follow_only=getattr(args, "follow", False),
        )
    except FaultError as exc:
        raise LiveSetupError(f"--fault: {exc}") from None
    for note in runtime.notes:
        log.warning("%s", note)
    try:
        runtime.hub.live_alerts.notifier = _notifier(args, runtime.hub.site_name)
    except ValueError as exc:
        runtime.stop()
        raise SystemExit(str(exc)) from None
    return runtime


def _notifier(args: argparse.Namespace, site: str):
    """The notifier of ``--alertmanager`` and ``--webhook`` (None without either)."""
    from ingest.live.notify import Notifier, Receiver

    receivers = [
        Receiver(kind, url, site)
        for kind, url in (
            ("alertmanager", getattr(args, "alertmanager", None)),
            ("webhook", getattr(args, "webhook", None)),
        )
        if url
    ]
    if not receivers:
        return None
    return Notifier(site, receivers, dashboard_url=public_url(args))


MAX_URL_CHARS = 300


def public_url(args: argparse.Namespace) -> str:
    """``--public-url`` without a trailing slash, else this server's own address; a bad URL exits with one line."""
    from urllib.parse import urlsplit

    given = getattr(args, "public_url", None)
    if not given:
        host = "localhost" if args.host in ("127.0.0.1", "::1") else args.host
        return f"http://{host}:{args.port}"
    parts = urlsplit(given)
    if len(given) > MAX_URL_CHARS or parts.scheme not in ("http", "https") or not parts.netloc or parts.query:
        raise SystemExit(f"--public-url: expected an http(s) URL without a query (at most {MAX_URL_CHARS} chars)")
    return given.rstrip("/")


def _check_binding(args: argparse.Namespace) -> None:
    """Refuse a non-loopback ``--host`` while no user exists (unless ``--insecure-no-auth``)."""
    from dashboard.auth.binding import check_binding
    from ingest.store.db import open_database
    from ingest.store.users import count_users

    engine = open_database(args.db)
    try:
        check_binding(args.host, count_users(engine), args.insecure_no_auth)
    finally:
        engine.dispose()


def _create_app(args: argparse.Namespace, runtime):
    from dashboard.app import app_for_hub
    from dashboard.auth import AuthSettings

    hub = runtime.hub
    app = app_for_hub(
        hub,
        tick_ms=args.tick_ms,
        auth=AuthSettings(
            session_idle_s=args.session_idle_h * 3600.0,
            secure_cookies=args.secure_cookies,
            trusted_proxies=args.trusted_proxies,
            bind_host=args.host,
            allowed_hosts=tuple(args.allowed_host or ()),
        ),
    )
    log.warning("dashboard of site %s on http://%s:%d/", hub.site_name, args.host, args.port)
    return app


def _serve_prod(args: argparse.Namespace) -> int:
    """Serve under gunicorn; the twin starts in its worker (see :mod:`dashboard.prod`)."""
    from gunicorn.errors import AppImportError

    from dashboard.prod import ProdServer
    from twin.errors import InputError
    from twin.site.load import load_site

    if not 1 <= args.threads <= 256:
        raise SystemExit(f"--threads {args.threads}: expected 1..256")
    if not 1 <= args.workers <= 16:
        raise SystemExit(f"--workers {args.workers}: expected 1..16")
    load_site(args.site)  # a bad site file is named here, before gunicorn starts

    def build_worker_app():
        try:
            runtime = _start_runtime(args)
        except InputError as exc:
            raise AppImportError(f"error: {exc}") from None  # gunicorn prints it and stops (exit 4)
        try:
            app = _create_app(args, runtime)
        except BaseException:
            runtime.stop()
            raise
        return app.server, lambda: _stop(runtime)

    master_pid = os.getpid()
    try:
        ProdServer(build_worker_app, args.host, args.port, threads=args.threads, workers=args.workers).run()
    except SystemExit as exc:
        if exc.code == APP_LOAD_ERROR and os.getpid() == master_pid:  # the worker exits with its own code
            return EXIT_BAD_INPUT
        raise
    return 0
