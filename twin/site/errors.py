"""Errors raised when a site or catalogue file is wrong."""

from __future__ import annotations

from twin.errors import InputError


class SiteError(InputError):
    """A site or catalogue file is invalid.

    The message names the file, the entity and the field, e.g.
    ``colossus.toml: busway 'H1-BW-R01-A': parent: 'H1-UPS-9-A' does not exist``.
    """

    def __init__(self, file: str, entity: str, field: str, message: str) -> None:
        self.file, self.entity, self.field, self.problem = file, entity, field, message
        super().__init__(f"{file}: {entity}: {field}: {message}")


class ScenarioError(InputError):
    """A scenario file is malformed or names something the site does not have."""
