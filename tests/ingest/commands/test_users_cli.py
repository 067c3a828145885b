"""``clustertwin users`` and ``clustertwin audit list``: passwords from standard input, one-line errors, JSON."""

from __future__ import annotations

import io
import json

import pytest

from twin.cli import EXIT_BAD_INPUT, main


@pytest.fixture
def db(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'users.db'}"


def run(monkeypatch, argv, stdin: str = ""):
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    return main(argv)


@pytest.mark.slow
def test_add_list_role_passwd_remove_and_the_audit_trail(monkeypatch, capsys, db):
    assert run(monkeypatch, ["users", "add", "ada", "--role", "admin", "--db", db], "a long password\n") == 0
    assert "first user" in capsys.readouterr().err
    assert run(monkeypatch, ["users", "add", "otto", "--role", "viewer", "--db", db], "another long one\n") == 0
    assert run(monkeypatch, ["users", "role", "otto", "operator", "--db", db]) == 0
    assert run(monkeypatch, ["users", "passwd", "otto", "--db", db], "a changed password\n") == 0
    capsys.readouterr()
    assert run(monkeypatch, ["users", "list", "--json", "--db", db]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"user_name": "ada", "role": "admin"},
        {"user_name": "otto", "role": "operator"},
    ]
    assert run(monkeypatch, ["users", "remove", "otto", "--db", db]) == 0
    capsys.readouterr()
    assert run(monkeypatch, ["audit", "list", "--json", "--db", db]) == 0
    out = capsys.readouterr().out
    entries = json.loads(out)
    assert [e["action"] for e in entries] == ["user.remove", "user.passwd", "user.role", "user.add", "user.add"]
    assert entries[2]["before"] == {"role": "viewer"} and entries[2]["after"] == {"role": "operator"}
    assert all(e["user_name"].startswith("cli:") for e in entries)
    assert "long" not in out  # no password in the log
    assert run(monkeypatch, ["audit", "list", "--json", "--action", "user.role", "--db", db]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 1


def test_token_is_printed_once(monkeypatch, capsys, db):
    run(monkeypatch, ["users", "add", "grafana", "--role", "viewer", "--db", db], "a long password\n")
    capsys.readouterr()
    assert run(monkeypatch, ["users", "token", "grafana", "--db", db]) == 0
    token = capsys.readouterr().out.strip()
    assert token.startswith("ct_") and len(token) > 40
    assert run(monkeypatch, ["audit", "list", "--json", "--db", db]) == 0
    assert token not in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, stdin, message",
    [
        (["users", "add", "Bad Name", "--role", "viewer"], "a long password\n", "user name 'Bad Name'"),
        (["users", "add", "ada", "--role", "viewer"], "short\n", "at least 10 characters"),
        (["users", "add", "ada", "--role", "viewer"], "", "at least 10 characters"),
        (["users", "remove", "nobody"], "", "no user named 'nobody'"),
        (["users", "passwd", "nobody"], "a long password\n", "no user named 'nobody'"),
        (["audit", "list", "--since", "yesterday"], "", "--since 'yesterday'"),
        (["audit", "list", "--limit", "0"], "", "audit limit 0"),
    ],
)
@pytest.mark.slow
def test_bad_input_is_one_line(monkeypatch, capsys, db, argv, stdin, message):
    assert run(monkeypatch, argv + ["--db", db], stdin) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err, err


def test_the_password_is_never_an_argument(capsys):
    with pytest.raises(SystemExit):
        main(["users", "add", "ada", "--role", "admin", "--password", "x"])
    assert "unrecognized arguments" in capsys.readouterr().err
