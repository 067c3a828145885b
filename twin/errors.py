"""The one error type the command line turns into a one-line message instead of a traceback.

Every error caused by what a user gave (a file, a name, a URL, a flag) derives from
:class:`InputError` and says in its message what is wrong and where.  ``clustertwin``
prints it as ``error: MESSAGE`` on stderr and exits with 2; any other exception is a
bug and keeps its traceback.
"""

from __future__ import annotations


class InputError(ValueError):
    """Bad input named in one line: file, entity or field, and what is wrong."""
