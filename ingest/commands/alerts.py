"""``clustertwin alerts list|silence|maintenance|mutes|expire``: a site's alerts, silences and maintenance
windows, from its database (the site may be running or stopped).

``silence`` and ``maintenance`` store a scoped silence or window as the API does (the same
checks: :class:`ingest.live.alert_actions.AlertActions`), ``expire`` ends one, and each change
writes the audit entry the API writes (:func:`ingest.store.mutes.audit_entry`), by
``cli:<operating-system user>``.  A running site's processes see the change within 5 s
(at once on PostgreSQL).  Bad input is one line ``error: …`` and exit code 2.
"""

from __future__ import annotations

import argparse
import re
import sys
from datetime import UTC, datetime, timedelta

from twin.commands.jsonout import dumps
from twin.errors import InputError

MAX_LIMIT = 100_000
DB_HELP = "database URL (default: $CLUSTERTWIN_DB, else the embedded SQLite file)"
SITE_HELP = (
    "the site, as its live twin recorded it in the database, or a reference-site name or site file "
    "(default: the database's only site)"
)
DURATION_HELP = "how long: seconds, or a number with s, m, h or d (90s, 30m, 2h, 1h30m, 1d)"
_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)([dhms]))+$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)([dhms])")
_NEGATIVE_VALUE = re.compile(r"^-\d+$|^-\d*\.\d+$|^-(?:\d+(?:\.\d+)?[dhms])+$")
_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``alerts`` (``list``, ``silence``, ``maintenance``, ``mutes``, ``expire``) to the ``clustertwin`` parser."""
    alerts = subparsers.add_parser(
        "alerts", help="list the alerts a site's live twin raised; silence them, schedule maintenance windows"
    )
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
    _register_mutes(sub)


def _scope_arguments(p: argparse.ArgumentParser, alert: bool) -> None:
    scope = p.add_mutually_exclusive_group(required=True)
    scope.add_argument(
        "--entity", metavar="PATTERN", help="a glob over entity names (H4-R0*-K*; a rack also covers its CDU and GPUs)"
    )
    scope.add_argument("--group", metavar="KEY", help="a cause group: the root alert's key (pump:cdu:1)")
    scope.add_argument("--hall", metavar="NAME", help="a hall of the site (H4)")
    if alert:
        scope.add_argument("--alert", type=int, metavar="ID", help="one alert (its own silence: no comment is kept)")
    p.add_argument("--rule", default="", help="only alerts of this rule (gpu_hot, xid …)")
    p.add_argument("--metric", default="", help="only alerts on this metric (gpu_temp_c …)")


def _register_mutes(sub) -> None:
    p = sub.add_parser(
        "silence",
        help="silence the alerts of a scope (or one alert) for up to 7 days",
        description="Silence every alert of a scope from now on: an entity pattern, a cause group or a hall "
        "(docs/alerts.md), optionally one rule and metric; or one alert by its id.  Muted alerts stay open but "
        "need no attention and are labelled for Alertmanager.",
    )
    _scope_arguments(p, alert=True)
    p.add_argument("--for", dest="duration", required=True, metavar="DURATION", help=DURATION_HELP + ", at most 7 d")
    p.add_argument("--comment", default="", help="why (required for a scope)")
    p.add_argument("--author", default=None, help="who it is by (default: cli:<operating-system user>)")
    p.set_defaults(func=_silence)
    p = sub.add_parser(
        "maintenance",
        help="schedule a maintenance window of a scope",
        description="Schedule a maintenance window of a scope (as 'silence'): from --start (default now; at most "
        "90 days ahead) to --end, or for --for; at most 7 days long.",
    )
    _scope_arguments(p, alert=False)
    p.add_argument("--start", default=None, metavar="ISO8601", help="when it starts (UTC if no zone; default: now)")
    when = p.add_mutually_exclusive_group(required=True)
    when.add_argument("--end", default=None, metavar="ISO8601", help="when it ends (UTC if no zone)")
    when.add_argument("--for", dest="duration", default=None, metavar="DURATION", help=DURATION_HELP)
    p.add_argument("--comment", "--reason", dest="comment", default="", help="the reason (required)")
    p.add_argument("--author", default=None, help="who it is by (default: cli:<operating-system user>)")
    p.set_defaults(func=_maintenance)
    p = sub.add_parser(
        "mutes",
        help="list the silences and maintenance windows not ended yet",
        description="The site's scoped silences and maintenance windows active or upcoming, soonest start first, "
        "then the alerts silenced by themselves.",
    )
    p.add_argument("--json", action="store_true", help="print a JSON array instead of a table")
    p.set_defaults(func=_mutes)
    p = sub.add_parser(
        "expire",
        help="end a silence or cancel a maintenance window now",
        description="Expire a scoped silence or cancel a maintenance window (one not started never starts), "
        "by the id 'mutes' lists; or lift one alert's own silence with --alert ID.",
    )
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("id", nargs="?", type=int, help="the silence's or window's id")
    which.add_argument("--alert", type=int, metavar="ID", help="lift this alert's own silence")
    p.add_argument("--author", default=None, help="who ends a silence or window (default: cli:<operating-system user>)")
    p.set_defaults(func=_expire)
    for each in ("silence", "maintenance", "mutes", "expire"):
        sub.choices[each].add_argument("--db", default=None, metavar="URL", help=DB_HELP)
        sub.choices[each].add_argument("--site", default=None, help=SITE_HELP)
        # "--for -5m" is a (negative) value, not an option: argparse would stop at it with its usage
        # ("expected one argument") instead of the command's one-line refusal of a negative duration
        sub.choices[each]._negative_number_matcher = _NEGATIVE_VALUE


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


# ------------------------------------------------------------------ silences and maintenance windows
def parse_duration_s(text: str, option: str = "--for") -> float:
    """Seconds of a duration such as ``90``, ``90s``, ``30m``, ``2h``, ``1h30m`` or ``1d``; > 0, else InputError."""
    value = (text or "").strip().lower()
    magnitude = value[1:] if value[:1] in "+-" else value
    if re.fullmatch(r"\d+(?:\.\d+)?", magnitude):
        seconds = float(magnitude)
    elif _DURATION.match(magnitude):
        seconds = sum(float(n) * _UNIT_S[unit] for n, unit in _DURATION_PART.findall(magnitude))
    else:
        raise InputError(f"{option} {text[:40]!r}: expected a duration such as 90s, 30m, 2h or 1d (or seconds)")
    if value.startswith("-") or seconds <= 0:
        raise InputError(f"{option} {text[:40]!r}: a duration must be positive")
    return seconds


def parse_time(text: str, option: str) -> datetime:
    """An ISO 8601 time (UTC when it names no zone), or ``now``; InputError naming ``option`` otherwise."""
    if text.strip().lower() == "now":
        return datetime.now(UTC)
    try:
        ts = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InputError(f"{option} {text[:40]!r}: expected an ISO 8601 time such as 2026-07-15T14:00") from None
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)


class _Site:
    """The database, the site's name and its alert actions, for one command."""

    def __init__(self, args) -> None:
        from ingest.live.alert_actions import AlertActions
        from ingest.store.db import open_database

        self.engine = open_database(args.db)
        self.name, halls = _site_of(self.engine, args.site)
        self.actions = AlertActions(self.engine, self.name, halls=halls)


def _site_of(engine, name: str | None) -> tuple[str, tuple[str, ...]]:
    """The site's name and hall names: its newest version stored in the database, else the site file ``name``."""
    from sqlmodel import Session, col, select

    from ingest.store.models import SiteVersion
    from twin.site.catalogue import load_catalogue
    from twin.site.load import build_site, load_site

    with Session(engine) as session:
        names = sorted(set(session.exec(select(SiteVersion.name)).all()))
        if name is None:
            if len(names) != 1:
                found = f"holds the sites {', '.join(names)}" if names else "holds no site yet"
                raise InputError(f"the database {found}: name one with --site")
            name = names[0]
        row = session.exec(
            select(SiteVersion).where(SiteVersion.name == name).order_by(col(SiteVersion.version).desc())
        ).first()
    state = build_site(row.content, f"{name} (stored)", load_catalogue()) if row is not None else load_site(name)
    return state.name, tuple(state.hall_name)


def _refused(exc: Exception) -> InputError:
    """A refusal of the store or the scope check (ValueError, KeyError) as the one-line InputError."""
    return InputError(str(exc.args[0]) if exc.args else str(exc))


def _scope(args) -> dict:
    kind = "entity" if args.entity is not None else "group" if args.group is not None else "hall"
    return {"kind": kind, "value": getattr(args, kind), "rule": args.rule, "metric": args.metric}


def _record_audit(site: _Site, entry: tuple) -> None:
    from ingest.store import audit

    audit.record(site.engine, audit.cli_user(), *entry)


def _alert_row(site: _Site, alert_id: int) -> dict:
    """The stored alert ``alert_id`` of the site (as a dict of its columns); InputError when there is none."""
    from sqlmodel import Session

    from ingest.store.models import Event

    with Session(site.engine) as session:
        event = session.get(Event, alert_id)
        if event is None or event.site_name != site.name:
            raise InputError(f"no alert with id {alert_id} on site {site.name}")
        return event.model_dump()


def _change_alert(site: _Site, alert_id: int, action: str, change) -> dict:
    """Apply ``change()`` to one alert and audit it as the API does; the alert after."""
    from ingest.store.mutes import alert_audit_state

    before = _alert_row(site, alert_id)
    try:
        change()
    except (KeyError, ValueError) as exc:
        raise _refused(exc) from None
    after = _alert_row(site, alert_id)
    target = f"alert {alert_id}: {before.get('entity_name', '')}"
    _record_audit(site, (action, target, alert_audit_state(before), alert_audit_state(after)))
    return after


def _author(args) -> str:
    from ingest.store import audit

    return args.author if args.author else audit.cli_user()


def _added(site: _Site, add) -> int:
    """Store a silence or window through ``add()``, audit it and say what was stored."""
    from ingest.store.mutes import audit_entry

    try:
        row = add()
    except ValueError as exc:  # a bad scope, an unknown hall, bad times, too many
        raise _refused(exc) from None
    _record_audit(site, audit_entry("add", None, row))
    what = "silence" if row["kind"] == "silence" else "maintenance window"
    print(
        f"{what} {row['id']} of {row['scope']} on site {site.name}: {_iso(row['starts_at'])} to {_iso(row['ends_at'])}"
    )
    return 0


def _silence(args) -> int:
    duration_s = parse_duration_s(args.duration)
    site = _Site(args)
    if args.alert is not None:
        if args.comment or args.rule or args.metric:
            raise InputError("--alert silences one alert, which keeps no comment, rule or metric: drop them")
        after = _change_alert(site, args.alert, "alert.silence", lambda: site.actions.silence(args.alert, duration_s))
        print(f"alert {args.alert} ({after['entity_name']}) silenced until {_iso(after['silenced_until'])}")
        return 0
    author = _author(args)
    return _added(site, lambda: site.actions.add_silence(_scope(args), duration_s, args.comment, author))


def _maintenance(args) -> int:
    now = datetime.now(UTC)
    start = parse_time(args.start, "--start") if args.start is not None else now
    if args.end is not None:
        end = parse_time(args.end, "--end")
    else:
        end = max(start, now) + timedelta(seconds=parse_duration_s(args.duration))
    site = _Site(args)
    author = _author(args)
    return _added(site, lambda: site.actions.add_maintenance(_scope(args), start, end, args.comment, author))


def _expire(args) -> int:
    from ingest.store.mutes import audit_entry

    site = _Site(args)
    if args.alert is not None:
        if _alert_row(site, args.alert)["silenced_until"] is None:
            raise InputError(f"alert {args.alert} is not silenced")
        _change_alert(site, args.alert, "alert.unsilence", lambda: site.actions.unsilence(args.alert))
        print(f"alert {args.alert}: its silence is lifted")
        return 0
    try:
        before, after = site.actions.expire_mute(args.id, _author(args))
    except ValueError as exc:  # unknown id, another site's, ended already
        raise _refused(exc) from None
    _record_audit(site, audit_entry("end", before, after))
    verb = "cancelled" if after["kind"] == "maintenance" else "expired"
    print(f"{after['kind']} {after['id']} of {after['scope']} {verb} at {_iso(after['ends_at'])}")
    return 0


def mute_records(site_rows: list[dict], silenced: list[tuple]) -> list[dict]:
    """What ``alerts mutes --json`` prints: each silence or window, then each alert silenced by itself."""
    records = [
        {
            "id": r["id"],
            "kind": r["kind"],
            "state": r["state"],
            "scope": r["scope"],
            "scope_kind": r["scope_kind"],
            "scope_value": r["scope_value"],
            "rule": r["rule_name"],
            "metric": r["metric"],
            "comment": r["comment"],
            "created_by": r["created_by"],
            "starts_at": _iso(r["starts_at"]),
            "ends_at": _iso(r["ends_at"]),
        }
        for r in site_rows
    ]
    records += [
        {
            "id": alert_id,
            "kind": "alert",
            "state": "active",
            "scope": f"alert {alert_id} ({key})",
            "scope_kind": "alert",
            "scope_value": key,
            "rule": key.split(":", 1)[0],
            "metric": "",
            "comment": "",
            "created_by": "",
            "starts_at": None,  # an alert's own silence keeps only its end
            "ends_at": _iso(until),
        }
        for alert_id, key, _raised, until in silenced
    ]
    return records


def _mutes(args) -> int:
    from ingest.store.mutes import silenced_alerts

    site = _Site(args)
    records = mute_records(site.actions.mutes(), silenced_alerts(site.engine, site.name, datetime.now(UTC)))
    if args.json:
        print(dumps(records, indent=2))
        return 0
    if not records:
        print(f"no silence or maintenance window on site {site.name}")
        return 0
    print(f"{'id':>6}  {'kind':<11} {'state':<8} {'from':<19}  {'until':<19}  {'by':<16} scope · comment")
    for r in records:
        starts = (r["starts_at"] or "")[:19]
        comment = f" · {r['comment']}" if r["comment"] else ""
        print(
            f"{r['id']:>6}  {r['kind']:<11} {r['state']:<8} {starts:<19}  {(r['ends_at'] or '')[:19]:<19}  "
            f"{r['created_by'][:16]:<16} {r['scope']}{comment}"
        )
    return 0
