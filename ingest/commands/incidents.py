"""``clustertwin incidents list|show|export|import|record``: the incident library from the command line.

``list`` shows the bundle files (the user's and the shipped ones) and the incidents the
database holds, with where each is kept (``shipped file``, ``library file``, ``+ database``,
or ``database`` alone: a row whose bundle is not in the library, not replayable here).

``import`` reads a bundle (``--format bundle``, the default) or a recording from another
system (see :mod:`ingest.imports`); ``--json`` prints ``{"name": …}``.  ``import`` and
``record`` (into the library) write an audit entry as ``cli:<login name>``.  Exit codes: 0 done,
1 refused (invalid file, unknown name), 2 bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from ingest.replay.bundle import BundleError, read_bundle
from ingest.replay.library import find_incident, library_entries, user_dir, validate
from ingest.synthetic.faults import FaultError

LIST_KEYS = ("name", "title", "site_name", "start", "end", "tags", "kept", "shipped", "in_database", "path")
IMPORT_FORMATS = ("bundle", "prometheus", "nvidia-smi-csv", "nvidia-smi-xml", "dcgmi-dmon", "mlperf-power")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``incidents`` and its sub-commands to the ``clustertwin`` parser."""
    p = subparsers.add_parser("incidents", help="recorded incidents: list, show, export, import, record")
    p.add_argument("--dir", help="the user's incident directory (default $CLUSTERTWIN_INCIDENTS or var/incidents)")
    sub = p.add_subparsers(dest="incidents_command", required=True, metavar="SUBCOMMAND")
    ls = sub.add_parser("list", help="incidents of the library (yours, the shipped ones and the database's)")
    ls.add_argument(
        "--db",
        help="database whose incidents to list too (default: $CLUSTERTWIN_DB or the embedded one, when it exists)",
    )
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=run_list)
    show = sub.add_parser("show", help="metadata and contents of one incident")
    show.add_argument("incident", help="name or bundle path")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=run_show)
    exp = sub.add_parser("export", help="copy an incident's bundle to a file")
    exp.add_argument("incident")
    exp.add_argument("output", help="file to write")
    exp.set_defaults(func=run_export)
    imp = sub.add_parser("import", help="validate a bundle or a recording from another system and store it")
    imp.add_argument("source", help="bundle file, log file, or a Prometheus URL")
    imp.add_argument("--format", choices=IMPORT_FORMATS, default="bundle")
    imp.add_argument("--site", default="auto", help="site name or path, or 'auto' to size one from the recording")
    imp.add_argument("--name", help="incident name (default: the bundle's, or derived from the source)")
    imp.add_argument("--replace", action="store_true", help="replace a stored incident of the same name")
    imp.add_argument("--start", help="window start for --format prometheus (ISO 8601 UTC)")
    imp.add_argument("--end", help="window end for --format prometheus (ISO 8601 UTC)")
    imp.add_argument("--step", type=float, default=5.0, help="seconds between frames (prometheus, default 5)")
    imp.add_argument("--run-log", help="the run's own MLPerf log (phases), for --format mlperf-power")
    imp.add_argument(
        "--db",
        help="database to record the incident (and an auto-built site's version) in "
        "(default: $CLUSTERTWIN_DB or the embedded one)",
    )
    imp.add_argument("--json", action="store_true")
    imp.set_defaults(func=run_import)
    rec = sub.add_parser("record", help="record an incident from the synthetic plant with injected faults")
    rec.add_argument("--site", required=True)
    rec.add_argument("--name", required=True)
    rec.add_argument("--fault", action="append", default=[], help="KIND:TARGET[@START_S][+DURATION_S][=VALUE]")
    rec.add_argument("--duration", type=float, default=600.0, help="seconds to record (default 600)")
    rec.add_argument("--tick", type=float, default=5.0, help="seconds between the plant's ticks (default 5)")
    rec.add_argument("--frame-every", type=float, help="seconds between recorded frames (default: every tick)")
    rec.add_argument("--start", help="simulated start (ISO 8601 UTC, default 2024-07-22T15:00Z)")
    rec.add_argument("--seed", type=int, default=0)
    rec.add_argument("--job", help="job file in data/jobs to run (default: the site's default job)")
    rec.add_argument(
        "--fleet",
        action="store_true",
        help="run the live fleet model beside the job (the LLM-lab job mix on the site's other GPUs, "
        "its occupancy driving the plant); default: the site's default job (or --job) alone",
    )
    rec.add_argument("--site-name", help="record on a variant of --site under this name (with --add-source)")
    rec.add_argument(
        "--add-source",
        action="append",
        default=[],
        metavar="TOML_TABLE",
        help="a power source the variant adds, as a TOML inline table of [power].sources "
        "(e.g. a battery the site does not have)",
    )
    rec.add_argument("--title", default="")
    rec.add_argument("--tag", action="append", default=[])
    rec.add_argument("--notes", default="")
    rec.add_argument("--detail-rack", action="append", default=[], help="rack to keep at full GPU detail")
    rec.add_argument("--max-detail-racks", type=int, help="racks at full GPU detail (default 16)")
    rec.add_argument(
        "--out",
        help="directory to write the bundle to (default: the user's incident directory, "
        "and the incident is recorded in the database)",
    )
    rec.add_argument("--db", help="database to record the incident in (default: $CLUSTERTWIN_DB or the embedded one)")
    rec.add_argument("--json", action="store_true")
    rec.set_defaults(func=run_record)


def _fail(message: str, code: int = 1) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


def _database_rows(args) -> list:
    """The database's incident rows; [] when the embedded default does not exist or (a warning) cannot be read."""
    from ingest.store.db import DEFAULT_SQLITE_PATH, DatabaseError, open_database
    from ingest.store.incidents import stored_incidents

    if not (args.db or os.environ.get("CLUSTERTWIN_DB")) and not DEFAULT_SQLITE_PATH.exists():
        return []  # nothing was ever recorded here: do not create a database to list it
    try:
        engine = open_database(args.db)
        try:
            return stored_incidents(engine)
        finally:
            engine.dispose()
    except (DatabaseError, SQLAlchemyError, OSError) as exc:
        print(f"warning: listing the incident files only: {exc}", file=sys.stderr)
        return []


def run_list(args) -> int:
    entries = library_entries(args.dir, _database_rows(args))
    if args.json:
        print(json.dumps([{k: e[k] for k in LIST_KEYS} for e in entries], indent=1, default=str))
        return 0
    print(f"{'NAME':<32} {'SITE':<14} {'START':<25} {'END':<25} {'KEPT':<24} TITLE")
    for e in entries:
        cells = [_printable(e[k], 200) for k in ("name", "site_name", "start", "end", "kept", "title")]
        print(f"{cells[0]:<32} {cells[1]:<14} {cells[2]:<25} {cells[3]:<25} {cells[4]:<24} {cells[5]}")
    return 0


def _printable(value, max_chars: int) -> str:
    """``value`` as one line fit for a terminal: control characters (ANSI escapes, newlines) shown escaped, cut."""
    text = str(value)
    if not text.isprintable():
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def run_show(args) -> int:
    try:
        bundle = read_bundle(find_incident(args.incident, args.dir))
    except (KeyError, BundleError) as exc:
        return _fail(str(exc).strip('"'))
    info = {
        **bundle.metadata,
        "tables": {k: t.num_rows for k, t in bundle.tables.items()},
        "events": bundle.frame("events").astype({"ts": str}).to_dict("records"),
    }
    if args.json:
        print(json.dumps(info, indent=1, default=str))
    else:
        for key, value in info.items():
            print(f"{key}: {value}")
    return 0


def run_export(args) -> int:
    try:
        path = find_incident(args.incident, args.dir)
        read_bundle(path)
    except (KeyError, BundleError) as exc:
        return _fail(str(exc).strip('"'))
    shutil.copyfile(path, args.output)
    return 0


def _record_in_database(args, path: Path, metadata: dict, action: str, before=None, after=None) -> None:
    """Add the stored bundle's incident to the database with its audit entry (``cli:<login name>``).

    A failure there is a warning: the file is stored.
    """
    from ingest.replay.intake import record_in_database
    from ingest.store.audit import cli_user
    from ingest.store.db import DatabaseError, open_database

    try:
        engine = open_database(getattr(args, "db", None))
        try:
            record_in_database(engine, metadata, actor=cli_user(), action=action, before=before, after=after, path=path)
        finally:
            engine.dispose()
    except (DatabaseError, SQLAlchemyError, OSError) as exc:
        print(f"warning: incident stored as {path} but not recorded in the database: {exc}", file=sys.stderr)


def run_import(args) -> int:
    from ingest.replay.intake import audit_state_of, import_incident, replaces

    def before_land(staging: Path, metadata: dict) -> None:  # the row and the entry commit before the file lands
        before = {"replaced": True} if replaces(metadata, args.dir) else None
        after = {**audit_state_of(staging, metadata), "format": args.format, "source": str(args.source)}
        _record_in_database(args, staging, metadata, "incident.import", before, after)

    try:
        done = import_incident(args, before_land=before_land)
    except (BundleError, ValueError, OSError) as exc:
        return _fail(str(exc))
    if args.json:
        print(json.dumps({"name": done.name, **done.report}))
    else:
        print(done.name)
        for line in done.report.get("skipped", []):
            print(f"skipped: {line}", file=sys.stderr)
    return 0


def run_record(args) -> int:
    from datetime import datetime

    from ingest.replay.session import T0, RecordSpec, record_synthetic

    spec = RecordSpec(
        site=args.site,
        name=args.name,
        faults=tuple(args.fault),
        duration_s=args.duration,
        tick_s=args.tick,
        frame_every_s=args.frame_every,
        start=datetime.fromisoformat(args.start) if args.start else T0,
        seed=args.seed,
        title=args.title,
        tags=tuple(args.tag),
        notes=args.notes,
        detail_racks=tuple(args.detail_rack),
        max_detail_racks=args.max_detail_racks,
        job=args.job,
        site_name=args.site_name,
        add_sources=tuple(args.add_source),
        fleet=args.fleet,
    )
    try:
        path = record_synthetic(spec, Path(args.out) if args.out else user_dir(args.dir))
        bundle = read_bundle(path)
        validate(bundle)
    except (FaultError, BundleError, ValueError) as exc:
        return _fail(str(exc))
    if not args.out:  # into the user's library: an incident of this installation
        from ingest.replay.intake import Imported

        recorded = Imported(bundle.name, path, bundle.metadata)
        _record_in_database(
            args,
            path,
            bundle.metadata,
            "incident.record",
            None,
            {**recorded.audit_state(), "faults": list(args.fault), "seed": args.seed},
        )
    print(json.dumps({"name": args.name, "path": str(path), "bytes": path.stat().st_size}) if args.json else path)
    return 0
