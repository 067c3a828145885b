"""The ``serve`` command's arguments, registered on a parser of our own."""

from __future__ import annotations

import argparse

import pytest

from dashboard.commands import DEFAULT_PORT, register, serve


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command", required=True))
    return parser


def test_serve_defaults():
    args = _parser().parse_args(["serve"])
    assert (args.site, args.host, args.port, args.db, args.source, args.tick_ms) == (
        "demo",
        "127.0.0.1",
        DEFAULT_PORT,
        None,
        None,
        2000,
    )
    assert args.func is serve


def test_serve_options():
    args = _parser().parse_args(
        [
            "serve",
            "--site",
            "colossus",
            "--host",
            "0.0.0.0",
            "--port",
            "9000",
            "--db",
            "sqlite:///x.db",
            "--source",
            "synthetic",
            "--fault",
            "pump:H1-R01-K01-CDU",
        ]
    )
    assert (args.site, args.host, args.port, args.db, args.source, args.fault) == (
        "colossus",
        "0.0.0.0",
        9000,
        "sqlite:///x.db",
        ["synthetic"],
        ["pump:H1-R01-K01-CDU"],
    )


def test_tick_above_two_seconds_is_refused():
    args = _parser().parse_args(["serve", "--tick-ms", "5000"])
    with pytest.raises(SystemExit, match="--tick-ms 5000"):
        serve(args)


def test_trusted_proxies_from_the_flag_else_the_environment_else_none(monkeypatch):
    from dashboard.commands import trusted_proxies

    monkeypatch.delenv("CLUSTERTWIN_TRUSTED_PROXIES", raising=False)
    assert _parser().parse_args(["serve"]).trusted_proxies is None and trusted_proxies(None) == 0
    assert trusted_proxies(_parser().parse_args(["serve", "--trusted-proxies", "2"]).trusted_proxies) == 2
    monkeypatch.setenv("CLUSTERTWIN_TRUSTED_PROXIES", "1")
    assert trusted_proxies(None) == 1 and trusted_proxies(0) == 0  # the flag wins
    for value, message in ((None, "0..5"), (6, "--trusted-proxies 6: expected 0..5"), (-1, "--trusted-proxies -1")):
        if value is None:
            monkeypatch.setenv("CLUSTERTWIN_TRUSTED_PROXIES", "two")
        with pytest.raises(SystemExit, match=message) as refused:
            trusted_proxies(value)
        assert "\n" not in str(refused.value)
    monkeypatch.setenv("CLUSTERTWIN_TRUSTED_PROXIES", "9")
    with pytest.raises(SystemExit, match=r"\$CLUSTERTWIN_TRUSTED_PROXIES 9: expected 0..5"):
        serve(_parser().parse_args(["serve"]))


def test_notification_links_use_the_public_url_behind_a_proxy():
    """Behind a reverse proxy the Alertmanager's links must point at the proxy's address, not 127.0.0.1."""
    from dashboard.commands import public_url

    direct = _parser().parse_args(["serve", "--port", "8050"])
    assert public_url(direct) == "http://localhost:8050"
    proxied = _parser().parse_args(["serve", "--public-url", "https://twin.example.org/ct/"])
    assert public_url(proxied) == "https://twin.example.org/ct"
    for bad in ("ftp://x", "twin.example.org", "https://x/?a=1", "https://" + "x" * 400):
        with pytest.raises(SystemExit, match="--public-url: expected an http"):
            public_url(_parser().parse_args(["serve", "--public-url", bad]))
