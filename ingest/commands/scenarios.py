"""``clustertwin scenario``: stored what-if scenarios on the command line (as the browser edits them).

``list``, ``show``, ``export`` and ``import`` read and write the database; ``apply`` appends
the edits of a scenario file to a stored scenario (all validated first, all stored or
none), or stores the file as a new scenario; ``undo``, ``redo``, ``rename``, ``duplicate``
and ``delete`` do what the browser's buttons do.  A scenario is named by its id or, with
``--site``, by its name.  Every command that changes a stored scenario writes an audit
entry (``scenario.<command>``) as ``cli:<login name>``, like the editor's buttons do for
their user.  ``ops`` lists the edit ops and their fields from the edit schema
(:mod:`twin.site.edit_schema`) that reads every file these commands take.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from twin.commands.jsonout import dumps


class _Lazy:
    """The store modules, imported on first use: building the parser stays free of SQL imports."""

    def __getattr__(self, name):
        from ingest.store import scenarios

        return getattr(scenarios, name)


store = _Lazy()


def open_database(url):
    from ingest.store.db import open_database as open_db

    return open_db(url)


def read_scenario_doc(path):
    from twin.scenario.conditions import read_scenario_doc as read

    return read(path)


def read_scenario_text(path):
    from twin.scenario.conditions import read_scenario_text as read

    return read(path)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``scenario`` and its sub-commands to the ``clustertwin`` parser."""
    top = subparsers.add_parser(
        "scenario",
        help="stored what-if scenarios: list, show, export, import, apply",
        description="What-if scenarios stored in the database (docs/scenarios.md).",
    )
    sub = top.add_subparsers(dest="scenario_command", required=True, metavar="SUBCOMMAND")

    def command(name: str, help_: str, func, *, ref: bool = True, site_required: bool = False):
        p = sub.add_parser(name, help=help_, description=help_)
        p.add_argument(
            "--db",
            default=None,
            metavar="URL",
            help="database URL (default: $CLUSTERTWIN_DB, else the embedded SQLite file)",
        )
        p.add_argument("--site", required=site_required, default=None, help="site name (to name scenarios by name)")
        if ref:
            p.add_argument("scenario", help="scenario id, or its name with --site")
        p.add_argument("--json", action="store_true", help="print JSON")
        p.set_defaults(func=func)
        return p

    command("list", "list stored scenarios", _list, ref=False)
    command("show", "show a stored scenario: its edits and the undo/redo position", _show)
    p = command("export", "print a stored scenario as TOML (its applied edits)", _export)
    p.add_argument("-o", "--output", default=None, metavar="FILE", help="write to FILE instead of stdout")
    p = command(
        "import",
        "store a scenario file as a new scenario (validated on the site)",
        _import,
        ref=False,
        site_required=True,
    )
    p.add_argument("file", help="scenario TOML")
    p.add_argument("--name", default=None, help="name to store it under (default: the file's [scenario] name)")
    p = command(
        "apply",
        "append a file's edits to a stored scenario, or store the file as a new one",
        _apply,
        ref=False,
        site_required=True,
    )
    p.add_argument("file", help="scenario TOML whose [[edits]] to append")
    p.add_argument(
        "--to",
        default=None,
        metavar="SCENARIO",
        help="stored scenario (id or name) to append to (default: the file's [scenario] name; "
        "created when the site has none of that name)",
    )
    command("undo", "undo the last applied edit", _undo)
    command("redo", "redo the last undone edit", _redo)
    p = command("rename", "rename a stored scenario", _rename)
    p.add_argument("name", help="new name")
    p = command("duplicate", "copy a stored scenario with its applied edits", _duplicate)
    p.add_argument("--name", default=None, help="name of the copy (default: '<name> (copy)')")
    command("delete", "delete a stored scenario", _delete)
    p = sub.add_parser(
        "ops",
        help="the edit ops and their fields (the schema every scenario file, the editor and the API use)",
        description="The ops an [[edits]] table can have, with each field's type and range (docs/scenarios.md); "
        "--json prints the JSON Schema of one edit, as the API's OpenAPI document shows it.",
    )
    p.add_argument("--json", action="store_true", help="print the JSON Schema")
    p.set_defaults(func=_ops)


def _audit(engine, action: str, name: str, before, after) -> None:
    """The audit entry of a change made from the command line (``cli:<login name>``)."""
    from ingest.store import audit

    audit.record(engine, audit.cli_user(), f"scenario.{action}", f"scenario {name}", before, after)


def _state(s) -> dict:
    """What an audit entry keeps of a stored scenario."""
    return {"id": s.id, "site": s.site_name, "edits": s.position, "n_edits": len(s.edits)}


def _find(engine, ref: str, site: str | None):
    if ref.isdigit():
        return store.get_scenario(engine, int(ref))
    if site is None:
        matches = [s for s in store.list_scenarios(engine) if s.name == ref]
        if len(matches) == 1:
            return matches[0]
        raise store.ScenarioStoreError(
            f"scenario {ref!r}: " + ("no such scenario" if not matches else "several sites have it; give --site")
        )
    found = store.find_scenario(engine, site, ref)
    if found is None:
        raise store.ScenarioStoreError(f"scenario {ref!r}: site {site!r} has no scenario of that name")
    return found


def _summary(s) -> dict:
    return {
        "id": s.id,
        "site": s.site_name,
        "name": s.name,
        "description": s.description,
        "baseline_version": s.baseline_version,
        "design_limits": s.design_limits,
        "n_edits": len(s.edits),
        "position": s.position,
        "can_undo": s.can_undo,
        "can_redo": s.can_redo,
        "created_at": s.created_at.isoformat(),
        "updated_at": s.updated_at.isoformat(),
    }


def _print(args, s, verb: str) -> int:
    if args.json:
        print(dumps(_summary(s) | {"edits": [e.as_dict() for e in s.edits]}, indent=2))
    else:
        print(f"{verb} scenario {s.id} {s.name!r} on {s.site_name}: {s.position} of {len(s.edits)} edits applied")
    return 0


def _list(args) -> int:
    rows = [_summary(s) for s in store.list_scenarios(open_database(args.db), args.site)]
    if args.json:
        print(dumps(rows, indent=2))
        return 0
    if not rows:
        print("no scenarios")
    for r in rows:
        print(
            f"{r['id']:>5}  {r['site']:<12} {r['name']:<32} {r['position']}/{r['n_edits']} edits  "
            f"{r['design_limits']:<6}  updated {r['updated_at']}"
        )
    return 0


def _show(args) -> int:
    s = _find(open_database(args.db), args.scenario, args.site)
    if args.json:
        print(dumps(_summary(s) | {"edits": [e.as_dict() for e in s.edits]}, indent=2))
        return 0
    for key, value in _summary(s).items():
        print(f"{key:<18} {value}")
    for i, e in enumerate(s.edits):
        mark = " " if i < s.position else "~"  # ~ : undone, redo brings it back
        fields = ", ".join(f"{k}={v!r}" for k, v in e.as_dict().items() if k != "op")
        print(f"  {mark} [{i}] {e.op}: {fields}")
    return 0


def _export(args) -> int:
    engine = open_database(args.db)
    text = store.export_toml(engine, _find(engine, args.scenario, args.site).id)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        print(text, end="")
    return 0


def _import(args) -> int:
    engine = open_database(args.db)
    text = read_scenario_text(args.file)
    s = store.import_toml(
        engine, args.site, text, name=args.name, baseline=store.baseline_state(engine, args.site, None)
    )
    _audit(engine, "import", s.name, None, _state(s) | {"file": str(args.file)})
    return _print(args, s, "imported as")


def _apply(args) -> int:
    engine = open_database(args.db)
    doc = read_scenario_doc(args.file)
    baseline = store.baseline_state(engine, args.site, None)
    target = args.to or doc.name
    existing = (
        store.get_scenario(engine, int(target)) if target.isdigit() else store.find_scenario(engine, args.site, target)
    )
    if existing is None:
        s = store.import_toml(engine, args.site, read_scenario_text(args.file), name=target, baseline=baseline)
        _audit(engine, "import", s.name, None, _state(s) | {"file": str(args.file)})
        return _print(args, s, "created")
    baseline = store.baseline_state(engine, existing.site_name, existing.baseline_version)
    s = store.append_edits(engine, existing.id, doc.edits, baseline)
    _audit(engine, "apply", s.name, _state(existing), _state(s) | {"added": [e.as_dict() for e in doc.edits]})
    return _print(args, s, f"appended {len(doc.edits)} edits to")


def _undo(args) -> int:
    engine = open_database(args.db)
    before = _find(engine, args.scenario, args.site)
    s = store.undo(engine, before.id)
    _audit(engine, "undo", s.name, _state(before), _state(s))
    return _print(args, s, "undid an edit of")


def _redo(args) -> int:
    engine = open_database(args.db)
    before = _find(engine, args.scenario, args.site)
    s = store.redo(engine, before.id)
    _audit(engine, "redo", s.name, _state(before), _state(s))
    return _print(args, s, "redid an edit of")


def _rename(args) -> int:
    engine = open_database(args.db)
    before = _find(engine, args.scenario, args.site)
    s = store.rename_scenario(engine, before.id, args.name)
    _audit(engine, "rename", s.name, {"name": before.name}, {"name": s.name})
    return _print(args, s, "renamed")


def _duplicate(args) -> int:
    engine = open_database(args.db)
    src = _find(engine, args.scenario, args.site)
    s = store.duplicate_scenario(engine, src.id, args.name)
    _audit(engine, "duplicate", s.name, None, _state(s) | {"copy_of": src.name})
    return _print(args, s, "created")


def _delete(args) -> int:
    engine = open_database(args.db)
    s = _find(engine, args.scenario, args.site)
    store.delete_scenario(engine, s.id)
    _audit(engine, "delete", s.name, _state(s) | {"edits_list": [e.as_dict() for e in s.applied]}, None)
    print(f"deleted scenario {s.id} {s.name!r}")
    return 0


def _ops(args) -> int:
    from twin.site.edit_schema import EDIT_MODELS, edit_json_schema, field_kind

    if args.json:
        print(dumps(edit_json_schema(), indent=2))
        return 0
    for model in EDIT_MODELS:
        fields = {k: info for k, info in model.model_fields.items() if k not in ("op", "note")}
        print(f"{model.model_fields['op'].default}: {model.__doc__}")
        for group in model.needs_one_of:
            print(f"    one of: {' | '.join(group)}")
        width = max(len(k) for k in fields)
        for key, info in fields.items():
            need = "required" if info.is_required() else "optional"
            print(f"    {key:<{width}}  {need:<8}  {field_kind(info):<28}  {info.description}")
    print("every op: note (a string), a person's note")
    return 0
