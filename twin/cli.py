"""The ``clustertwin`` command: each package registers its own sub-commands.

Packages declare a ``register(subparsers)`` function in the ``clustertwin.commands``
entry-point group (``[project.entry-points]`` in ``pyproject.toml``); it adds their
sub-commands and sets ``func`` (called with the parsed args, returns an exit code).
The twin's own commands come first, the others in entry-point name order.
"""

from __future__ import annotations

import argparse
import logging
import sys
from importlib.metadata import entry_points

COMMAND_GROUP = "clustertwin.commands"


def command_registrars() -> list:
    """The ``register`` functions of every installed package, the twin's first."""
    found = sorted(entry_points(group=COMMAND_GROUP), key=lambda ep: (ep.name != "twin", ep.name))
    if not found:
        raise RuntimeError(f"no '{COMMAND_GROUP}' entry points: install the project (pip install -e .)")
    return [ep.load() for ep in found]


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every area's sub-commands."""
    parser = argparse.ArgumentParser(
        prog="clustertwin",
        description="Digital twin of a hyperscale liquid-cooled AI training cluster.",
    )
    parser.add_argument("--log-level", default="WARNING", help="logging level (default: WARNING)")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in command_registrars():
        register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
