"""The ``clustertwin`` command: each package registers its own sub-commands.

Packages declare a ``register(subparsers)`` function in the ``clustertwin.commands``
entry-point group (``[project.entry-points]`` in ``pyproject.toml``); it adds their
sub-commands and sets ``func`` (called with the parsed args, returns an exit code).
The twin's own commands come first, the others in entry-point name order.

A command that meets bad input raises :class:`twin.errors.InputError`; :func:`main` prints
it as one line ``error: …`` on stderr and exits with 2 (the traceback only with
``--log-level DEBUG``).  Any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from importlib.metadata import entry_points

from twin.errors import InputError

COMMAND_GROUP = "clustertwin.commands"
EXIT_BAD_INPUT = 2
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
log = logging.getLogger("clustertwin")


def command_registrars() -> list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]]:
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
    parser.add_argument(
        "--log-level",
        default="WARNING",
        type=str.upper,
        choices=LOG_LEVELS,
        help="logging level (default: WARNING); DEBUG also shows tracebacks of input errors",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in command_registrars():
        register(subparsers)
    return parser


MAX_LOG_MESSAGE_CHARS = 2000  # a value a client or a source sent (a 100 kB host name) must not flood the log


def cap_log_line(record: logging.LogRecord) -> bool:
    """Cut a log message longer than :data:`MAX_LOG_MESSAGE_CHARS` (its arguments formatted in) to that length."""
    message = record.getMessage()
    if len(message) > MAX_LOG_MESSAGE_CHARS:
        record.msg, record.args = f"{message[:MAX_LOG_MESSAGE_CHARS]}… ({len(message)} characters, cut)", None
    return True


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(cap_log_line)
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        log.debug("input error", exc_info=True)
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
