"""The one error type the command line turns into a one-line message instead of a traceback.

Every error caused by what a user gave (a file, a name, a URL, a flag) derives from
:class:`InputError` and says in its message what is wrong and where.  ``clustertwin``
prints it as ``error: MESSAGE`` on stderr and exits with 2; any other exception is a
bug and keeps its traceback.
"""

from __future__ import annotations


def one_line(text: str) -> str:
    """``text`` with newlines and other unprintable characters escaped (``\\n``), so it stays one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class InputError(ValueError):
    """Bad input named in one line: file, entity or field, and what is wrong.

    The message is kept to one line even when it quotes input holding newlines.
    """

    def __init__(self, message: str = "") -> None:
        super().__init__(one_line(str(message)))
