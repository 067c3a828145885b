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
    assert (args.site, args.host, args.port, args.db, args.source, args.tick_ms) == ("demo", "127.0.0.1", DEFAULT_PORT, None, None, 2000)
    assert args.func is serve


def test_serve_options():
    args = _parser().parse_args(["serve", "--site", "colossus", "--host", "0.0.0.0", "--port", "9000",
                                 "--db", "sqlite:///x.db", "--source", "synthetic", "--fault", "pump:H1-R01-K01-CDU"])
    assert (args.site, args.host, args.port, args.db, args.source, args.fault) == (
        "colossus", "0.0.0.0", 9000, "sqlite:///x.db", ["synthetic"], ["pump:H1-R01-K01-CDU"])


def test_tick_above_two_seconds_is_refused():
    args = _parser().parse_args(["serve", "--tick-ms", "5000"])
    with pytest.raises(SystemExit, match="--tick-ms 5000"):
        serve(args)
