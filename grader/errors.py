"""A command that stops before doing its work, and the exit code that says why.

Every verb raises :class:`CommandError` (or a kind of it) for what it will not do as asked;
``grader.cli`` alone turns it into one ``error:`` line and the exit code, beside the codes of
an interrupt, a broken environment and a failure of the grader itself.
"""

from __future__ import annotations


class CommandError(Exception):
    """The command will not run as asked; ``exit_code`` 2 for bad arguments, an unknown assignment
    or nothing to grade (``release`` also uses 1, a leak, and 3, a failed step; ``batch`` 3, weak
    isolation)."""

    exit_code = 2

    def __init__(self, message: str, exit_code: int | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code
