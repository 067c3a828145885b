"""The twin's ``clustertwin`` sub-commands: sites, units, bench, throughput, project and blast-radius."""

from __future__ import annotations

import argparse

from twin.commands import bench, blast, project, sites, throughput


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the twin's sub-commands (registered as the ``twin`` entry point)."""
    for module in (sites, bench, throughput, project, blast):
        module.register(subparsers)
