"""``clustertwin users add|remove|list|passwd|role|token`` and ``clustertwin audit list``.

Passwords are read from standard input (a terminal is asked twice without echo), never
from the command line, where other users of the machine could read them.  Every change is
written to the audit log as ``cli:<operating-system user>``.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from datetime import UTC, datetime

from ingest.store.roles import ROLES
from twin.commands.jsonout import dumps

DB_HELP = "database URL (default: $CLUSTERTWIN_DB, else the embedded SQLite file)"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``users`` and ``audit`` to the ``clustertwin`` parser."""
    users = subparsers.add_parser(
        "users",
        help="manage the dashboard's users and roles",
        description="Users of the dashboard and the API.  Roles: viewer (reads everything), operator (also edits "
        "scenarios, acknowledges and silences alerts, records and imports incidents), admin (also manages users "
        "and sources).  Once a user exists, every page and API route needs a login.",
    )
    sub = users.add_subparsers(dest="users_command", required=True, metavar="SUBCOMMAND")
    p = sub.add_parser("add", help="add a user (password from standard input)")
    p.add_argument("name", help="lower-case letter, then up to 31 lower-case letters, digits, '.', '_' or '-'")
    p.add_argument("--role", required=True, choices=ROLES)
    p.set_defaults(func=_add)
    p = sub.add_parser("remove", help="remove a user (their sessions end within seconds)")
    p.add_argument("name")
    p.set_defaults(func=_remove)
    p = sub.add_parser("passwd", help="set a user's password (from standard input); ends their sessions")
    p.add_argument("name")
    p.set_defaults(func=_passwd)
    p = sub.add_parser("role", help="change a user's role; ends their sessions")
    p.add_argument("name")
    p.add_argument("role", choices=ROLES)
    p.set_defaults(func=_role)
    p = sub.add_parser("token", help="print a new API token for a user (replaces the previous one)")
    p.add_argument("name")
    p.set_defaults(func=_token)
    p = sub.add_parser("list", help="list users and roles")
    p.add_argument("--json", action="store_true", help="print a JSON array of {user_name, role}")
    p.set_defaults(func=_list)
    for each in sub.choices.values():
        each.add_argument("--db", default=None, metavar="URL", help=DB_HELP)

    log = subparsers.add_parser("audit", help="read the audit log (who changed what, when)")
    sub = log.add_subparsers(dest="audit_command", required=True, metavar="SUBCOMMAND")
    p = sub.add_parser("list", help="list audit entries, newest first")
    p.add_argument("--db", default=None, metavar="URL", help=DB_HELP)
    p.add_argument("--user", default=None, help="only this user's changes (e.g. alice, cli:root)")
    p.add_argument("--action", default=None, help="only this action, or a prefix ending in '.' (e.g. alert.)")
    p.add_argument(
        "--since", default=None, metavar="ISO8601", help="only entries at or after this time (UTC if no zone)"
    )
    p.add_argument("--limit", type=int, default=200, help="at most this many (1..1000, default 200)")
    p.add_argument("--json", action="store_true", help="print a JSON array instead of a table")
    p.set_defaults(func=_audit_list)


def read_password(confirm: bool = True) -> str:
    """The password from standard input: a terminal is asked (twice), a pipe gives its first line."""
    from ingest.store.users import UserError

    if sys.stdin.isatty():
        first = getpass.getpass("password: ")
        if confirm and getpass.getpass("again: ") != first:
            raise UserError("the two passwords differ")
        return first
    line = sys.stdin.readline(4096)
    return line.rstrip("\r\n")


def _add(args) -> int:
    from ingest.store import audit
    from ingest.store.db import open_database
    from ingest.store.users import add_user, count_users

    engine = open_database(args.db)
    first = count_users(engine) == 0
    info = add_user(engine, args.name, args.role, read_password())
    audit.record(engine, audit.cli_user(), "user.add", f"user {info.name}", None, {"role": info.role})
    print(f"added {info.name} ({info.role})")
    if first:
        print("this is the first user: from now on every page and API route needs a login", file=sys.stderr)
    return 0


def _remove(args) -> int:
    from ingest.store import audit
    from ingest.store.db import open_database
    from ingest.store.users import count_users, remove_user

    engine = open_database(args.db)
    info = remove_user(engine, args.name)
    audit.record(engine, audit.cli_user(), "user.remove", f"user {info.name}", {"role": info.role}, None)
    print(f"removed {info.name}")
    if count_users(engine) == 0:
        print(
            "warning: that was the last user: running servers keep requiring logins (every request gets 401) "
            "until a user is added; a restart serves without logins, on loopback only",
            file=sys.stderr,
        )
    return 0


def _passwd(args) -> int:
    from ingest.store import audit
    from ingest.store.db import open_database
    from ingest.store.users import UserError, find_user, set_password

    engine = open_database(args.db)
    if find_user(engine, args.name) is None:
        raise UserError(f"no user named {args.name!r}")
    info = set_password(engine, args.name, read_password())
    audit.record(engine, audit.cli_user(), "user.passwd", f"user {info.name}", None, {"sessions": "ended"})
    print(f"password of {info.name} changed; their sessions have ended")
    return 0


def _role(args) -> int:
    from ingest.store import audit
    from ingest.store.db import open_database
    from ingest.store.users import UserError, find_user, set_role

    engine = open_database(args.db)
    before = find_user(engine, args.name)
    if before is None:
        raise UserError(f"no user named {args.name!r}")
    info = set_role(engine, args.name, args.role)
    audit.record(engine, audit.cli_user(), "user.role", f"user {info.name}", {"role": before.role}, {"role": info.role})
    print(f"{info.name} is now {info.role}")
    return 0


def _token(args) -> int:
    from ingest.store import audit
    from ingest.store.db import open_database
    from ingest.store.users import new_token

    engine = open_database(args.db)
    token = new_token(engine, args.name)
    audit.record(engine, audit.cli_user(), "user.token", f"user {args.name}", None, {"token": "new"})
    print(token)
    print("send it as 'Authorization: Bearer <token>'; it is shown only now", file=sys.stderr)
    return 0


def _list(args) -> int:
    from ingest.store.db import open_database
    from ingest.store.users import list_users

    users = [{"user_name": u.name, "role": u.role} for u in list_users(open_database(args.db))]
    if args.json:
        print(dumps(users, indent=2))
    elif not users:
        print("no users: the dashboard needs no login (and serves only on 127.0.0.1)")
    else:
        for user in users:
            print(f"{user['user_name']:<32} {user['role']}")
    return 0


def _since(text: str | None) -> datetime | None:
    from ingest.store.users import UserError

    if text is None:
        return None
    try:
        ts = datetime.fromisoformat(text)
    except ValueError:
        raise UserError(f"--since {text[:40]!r}: expected an ISO 8601 time such as 2026-07-15T14:00") from None
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)


def _audit_list(args) -> int:
    from ingest.store import audit
    from ingest.store.db import open_database

    where = audit.AuditFilter(user_name=args.user, action=args.action, since=_since(args.since), limit=args.limit)
    entries = audit.list_entries(open_database(args.db), where)
    records = [
        {
            "at": e["at"].isoformat(),
            "user_name": e["user_name"],
            "action": e["action"],
            "target": e["target"],
            "before": e["before"],
            "after": e["after"],
            "address": e["address"],
        }
        for e in entries
    ]
    if args.json:
        print(dumps(records, indent=2))
        return 0
    if not records:
        print("no audit entries match")
    for r in records:
        print(
            f"{r['at'][:19]}  {r['user_name']:<20} {r['action']:<18} {r['target']}  "
            f"{dumps(r['before'])} → {dumps(r['after'])}"
        )
    return 0
