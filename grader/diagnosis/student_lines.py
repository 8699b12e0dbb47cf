"""The lines of the diagnosed module that a recorded step points at.

A step is recorded with its file and line (and the line that called the function it was made in).
Shown to a student, it must be a line of the diagnosed module's own file: a step made in another file
of theirs is shown at the line of this module that called into it. Also the lines that make what a
shown line uses besides tensors (attributes, numbers).
"""

from __future__ import annotations

from pathlib import Path

from grader.diagnosis.source_text import MAX_LINES, called_on, made_at, statement_at
from grader.model import Diagnosis
from grader.sandbox.protocol import Step
from grader.sandbox.trace import OUTSIDE


def called_into(step: Step, stem: str, sound: frozenset = frozenset()) -> list | None:
    """For a step made in another file of the student's (their own ``masked_softmax.py``) from what
    the diagnosed module passed it alone, or from that file's module's own weights where that file
    is ``sound`` (every check of its own passed: its construction sizes them as the reference's does,
    from what the diagnosed module passed it): the where of the line of ``stem``.py that called into
    it, the line the hidden grade shows (its reference module is no file of the student's); else None."""
    where = step.where
    if len(where) < 4 or not where[3] or where[0] == f"{stem}.py":
        return None
    if where[0] not in sound and any(type(p) is str and p != OUTSIDE for p in step.parents):
        return None
    return [f"{stem}.py", where[3], 0]


def line_at(where: list, folder: Path | None, stem: str) -> tuple[str, str]:
    """``("causal.py, line 42", that line's code)`` for a step's ``[file, line, calling line]``; ("", "")
    if unknown or in another file than the diagnosed module's own (``stem``.py): a step made in a
    helper module the student's code calls (their own ``causal.py`` or ``masked_softmax.py``) is that
    module's, and its line would point the student at the wrong file. A step made in a function of
    the module called from another line of it says so: ``"... line 63 (called at line 98: ...)"``."""
    name, number = where[0], where[1]
    if not name or not number or name != f"{stem}.py":
        return "", ""
    at = f"{name}, line {number}"
    if folder is None:
        return at, ""
    code = statement_at(Path(folder) / name, number)
    calling = where[2] if len(where) > 2 else 0
    if calling and calling != number:
        called = statement_at(Path(folder) / name, calling)
        if called:
            code = f"{code}   (called at line {calling}: {called})"
    return at, code


def entered_at(steps: list[Step], i: int, stem: str) -> int:
    """The first step after ``i`` made at a line of ``stem``.py and computed from step ``i`` (through
    steps of other files): the line of the diagnosed module whose call into a helper module of the
    student's (their own ``scoring.py``) made what step ``i`` made there; ``i`` when there is none."""
    inside = {i}
    for k in range(i + 1, len(steps)):
        parents = {p for p in steps[k].parents if type(p) is int}
        if not parents & inside:
            continue
        if steps[k].where[0] == f"{stem}.py":
            return k
        inside.add(k)
    return i


def computed_lines(wheres: list, stem: str) -> set[int]:
    """The lines of ``stem``.py where a recorded step was computed, or that called the function
    computing it (a step's ``[file, line, calling line]``)."""
    return {n for where in wheres if where[0] == f"{stem}.py" for n in where[1:3] if n}


def uses_made(diagnosis: Diagnosis, stem: str, at: str, code: str, computed: set[int], folder: Path | None,
              layers: list | None = None, same_method: bool = False) -> None:
    """The lines of the student's file that make what ``code`` (at ``at``) uses besides the values
    the walk followed: the attributes it uses (``self.W_o``), made in another method of the class,
    and the local names assigned on lines where no tensor was computed (``computed``: a number,
    ``d = keys.shape[1]``). ``layers``: of the attributes the line calls, only these (None: all)."""
    number = at.split(", line ")[-1].split(",")[0]
    if folder is None or not number.isdigit():
        return
    made = made_at(Path(folder) / f"{stem}.py", int(number), code.split("   (called at line")[0], computed, same_method)
    if layers is not None:
        calls = called_on(code)
        made = {name: lines for name, lines in made.items()
                if name.removeprefix("self.") not in calls or name.removeprefix("self.") in layers}
    diagnosis.made = [f"{name}: line {n}: {text}" for name, lines in made.items() for n, text in lines][:MAX_LINES]
