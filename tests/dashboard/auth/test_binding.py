"""``serve`` listens beyond loopback only when someone must log in (or the opt-out is explicit and loud)."""

from __future__ import annotations

import logging

import pytest

from dashboard.auth.binding import BindingError, check_binding, is_loopback
from twin.cli import EXIT_BAD_INPUT, main


@pytest.mark.parametrize(
    "host, loopback",
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.1.2.3", False),
        ("example.org", False),
    ],
)
def test_loopback_addresses(host, loopback):
    assert is_loopback(host) is loopback


def test_non_loopback_without_users_is_refused_unless_opted_out(caplog):
    check_binding("127.0.0.1", 0, False)
    check_binding("0.0.0.0", 1, False)
    with pytest.raises(BindingError, match="needs a login, and no user exists"):
        check_binding("0.0.0.0", 0, False)
    with caplog.at_level(logging.CRITICAL):
        check_binding("0.0.0.0", 0, True)
    assert sum("WITHOUT ANY LOGIN" in r.getMessage() for r in caplog.records) == 3


def test_serve_refuses_to_start_on_all_addresses_without_users(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'twin.db'}"
    assert main(["serve", "--site", "demo", "--db", db, "--host", "0.0.0.0"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith("error: --host 0.0.0.0: serving beyond this machine needs a login") and err.count("\n") == 1


def test_serve_help_names_the_access_flags(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    out = capsys.readouterr().out
    for flag in ("--insecure-no-auth", "--session-idle-h", "--secure-cookies"):
        assert flag in out


def test_serve_flag_default_is_the_access_layer_default():
    from dashboard.auth.settings import AuthSettings
    from dashboard.commands import DEFAULT_SESSION_IDLE_H

    assert DEFAULT_SESSION_IDLE_H * 3600.0 == AuthSettings().session_idle_s
