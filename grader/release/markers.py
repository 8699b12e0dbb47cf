"""nbgrader's solution markers in the project's Python sources: the one place that reads them.

A solution region runs from a ``### BEGIN SOLUTION`` line to a ``### END SOLUTION`` line
(markers matched on the stripped line, as nbgrader does in notebook cells). ``grader.release.stubs``
replaces each region with a TODO; ``grader.release.leaks`` looks for the lines inside them in a release.
"""

from __future__ import annotations

from collections.abc import Iterator

# Split so that this file does not itself contain the markers a release is scanned for.
BEGIN, END = "### BEGIN " + "SOLUTION", "### END " + "SOLUTION"
# Every nbgrader marker that must never reach a student.
ALL = ("BEGIN " + "SOLUTION", "END " + "SOLUTION", "BEGIN " + "HIDDEN TESTS", "END " + "HIDDEN TESTS")

CODE, SOLUTION, REGION = "code", "solution", "region"  # kinds of line: see :func:`lines`


class MarkerError(ValueError):
    """Solution markers are unbalanced or misplaced."""


def lines(source: list[str], filename: str = "<source>") -> Iterator[tuple[str, int, str]]:
    """``(kind, number, line)`` for every line of ``source``: ``code`` outside the regions,
    ``solution`` inside, ``region`` for a BEGIN marker (where a region starts); END markers are
    not yielded. Unbalanced markers raise :class:`MarkerError`."""
    inside = False
    for number, line in enumerate(source, start=1):
        stripped = line.strip()
        if stripped == BEGIN:
            if inside:
                raise MarkerError(f"{filename}:{number}: {BEGIN} inside another solution region")
            inside = True
            yield REGION, number, line
        elif stripped == END:
            if not inside:
                raise MarkerError(f"{filename}:{number}: {END} without {BEGIN}")
            inside = False
        else:
            yield (SOLUTION if inside else CODE), number, line
    if inside:
        raise MarkerError(f"{filename}: {BEGIN} is never closed")


def solution_regions(source: list[str], filename: str = "<source>") -> tuple[list[str], list[str]]:
    """(lines inside solution regions, lines outside them) of one source, markers left out."""
    inside, outside = [], []
    for kind, _, line in lines(source, filename):
        if kind == SOLUTION:
            inside.append(line)
        elif kind == CODE:
            outside.append(line)
    return inside, outside
