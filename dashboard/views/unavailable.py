"""The error of a view key that cannot be shown (raised by the view kinds, caught by the pages)."""


class ViewUnavailable(ValueError):
    """A view key that cannot be shown; the message says why, for the page."""
