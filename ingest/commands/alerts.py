"""``clustertwin alerts list``: the alerts stored by a running or stopped site, from its database."""

from __future__ import annotations

import argparse
import sys

from twin.commands.jsonout import dumps

MAX_LIMIT = 100_000


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``alerts`` (with its ``list`` sub-command) to the ``clustertwin`` parser."""
    alerts = subparsers.add_parser("alerts", help="list the alerts a site's live twin raised")
    sub = alerts.add_subparsers(dest="alerts_command", required=True, metavar="SUBCOMMAND")
    p = sub.add_parser(
        "list",
        help="list stored alerts, most urgent first",
        description="Read the alerts from the database of a running or stopped site: severity, "
        "entity, group (the root cause it belongs to), impact, text, raised_at and updated_at.",
    )
    p.add_argument(
        "--db",
        default=None,
        metavar="URL",
        help="database URL (default: $CLUSTERTWIN_DB, else the embedded SQLite file)",
    )
    p.add_argument("--site", default=None, help="only this site's alerts (default: every site in the database)")
    p.add_argument("--active", action="store_true", help="only alerts that have not cleared")
    p.add_argument("--limit", type=int, default=500, help=f"at most this many, newest first (1..{MAX_LIMIT})")
    p.add_argument("--json", action="store_true", help="print a JSON array instead of a table")
    p.set_defaults(func=_list)


def _urgency(a: dict) -> tuple:
    from ingest.live.alert_rules import SEVERITY_RANK

    return (
        a["cleared_at"] is not None,
        SEVERITY_RANK.get(a["severity"], 3),
        -a["impact"]["tokens_per_s"],
        -a["impact"]["gpus"],
        a["entity_name"],
        a["id"],
    )


def _iso(ts):
    return ts.isoformat() if ts is not None else None


def _record(a: dict) -> dict:
    """One alert as ``alerts list --json`` prints it (ISO 8601 times; non-finite numbers become null)."""
    return {
        "id": a["id"],
        "site": a["site"],
        "severity": a["severity"],
        "entity": {"kind": a["entity_kind"], "name": a["entity_name"]},
        "group": a["group"],
        "impact": a["impact"],
        "text": a["message"],
        "runbook": a["runbook"],
        "value": a["value"],
        "raised_at": _iso(a["raised_at"]),
        "updated_at": _iso(a["updated_at"]),
        "cleared_at": _iso(a["cleared_at"]),
        "acknowledged": a["acknowledged"],
        "ack_comment": a["ack_comment"],
        "silenced_until": _iso(a["silenced_until"]),
    }


def _list(args) -> int:
    # the alert and store stacks are imported when the command runs, not for every clustertwin command
    from ingest.live.alerts import list_alerts
    from ingest.store.db import open_database

    if not 1 <= args.limit <= MAX_LIMIT:
        print(f"error: --limit must be in 1..{MAX_LIMIT} (got {args.limit})", file=sys.stderr)
        return 2
    alerts = sorted(list_alerts(open_database(args.db), args.site, args.active, args.limit), key=_urgency)
    records = [_record(a) for a in alerts]
    if args.json:
        print(dumps(records, indent=2))
        return 0
    if not records:
        print("no alerts")
    for r in records:
        state = "cleared" if r["cleared_at"] else ("acked" if r["acknowledged"] else "open")
        impact = r["impact"]
        print(
            f"{r['severity']:<8} {state:<7} {r['entity']['kind']}:{r['entity']['name']:<24} {r['text']}"
            f"  [{impact['gpus']} GPUs, {impact['tokens_per_s']:.0f} tokens/s, {impact['power_mw']:.2f} MW;"
            f" group {r['group']}; since {r['raised_at']}]"
        )
    return 0
