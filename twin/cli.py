"""The ``clustertwin`` command: one sub-command module per area, wired here.

Each module in :data:`COMMAND_MODULES` has ``register(subparsers)`` that adds its
sub-commands and sets ``func`` (called with the parsed args, returns an exit code).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

COMMAND_MODULES = (
    "twin.commands_sites",
    "twin.commands_bench",
    "twin.commands_throughput",
    "twin.commands_project",
    "ingest.commands",
    "dashboard.commands",
)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every area's sub-commands."""
    parser = argparse.ArgumentParser(
        prog="clustertwin",
        description="Digital twin of a hyperscale liquid-cooled AI training cluster.",
    )
    parser.add_argument("--log-level", default="WARNING", help="logging level (default: WARNING)")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
