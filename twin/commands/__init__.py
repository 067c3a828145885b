"""The twin's ``clustertwin`` sub-commands: sites, units, bench, throughput and project."""

from __future__ import annotations

from twin.commands import bench, project, sites, throughput


def register(subparsers) -> None:
    """Add the twin's sub-commands (registered as the ``twin`` entry point)."""
    for module in (sites, bench, throughput, project):
        module.register(subparsers)
