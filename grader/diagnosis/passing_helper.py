"""A function of the module that passes every check of its own, called where the value goes wrong.

When the line shown (for the first differing step, or where a wrong shape was made) is inside such a
helper, the helper is right: the line of another function that called it, with what it gave it, is
where it goes wrong, and that line is shown instead.
"""

from __future__ import annotations

from pathlib import Path

import torch

from grader.diagnosis.known_values import KnownValues
from grader.diagnosis.mechanism import dropped_results, enclosing_function
from grader.diagnosis.sent import ProbeRun
from grader.diagnosis.source_text import statement_at
from grader.diagnosis.student_lines import computed_lines, uses_made
from grader.model import Diagnosis
from grader.sandbox.protocol import parse_shapes


def _passing_functions(runs: list[ProbeRun]) -> set[str]:
    """The module's functions called by checks of their own (a probe given ``function=NAME``, the
    built-in ``call`` or a suite's own probe that calls that function alone, or ``functions=[...]``,
    the names it calls), each passing all of them."""
    checked: dict[str, bool] = {}
    for run in runs:
        kwargs = run.kwargs if isinstance(run.kwargs, dict) else {}
        for name in [kwargs.get("function"), *(kwargs.get("functions") or [])]:  # a probe that checks
            if isinstance(name, str):  # functions of the module by name says which
                checked[name] = checked.get(name, True) and not run.failed
    return {name for name, passed in checked.items() if passed}


def _helper_called(path: Path, stem: str, number: str, wheres: list, passing: set[str]) -> tuple[str, int] | None:
    """``(helper, calling line)`` when line ``number`` of ``stem``.py is inside a function of ``passing``
    and a step recorded there (``wheres``: steps' ``[file, line, calling line]``) was called from a line
    of another function of the module; else None."""
    helper = enclosing_function(path, int(number)) if number.isdigit() else ""
    if helper not in passing:
        return None
    where = next((w for w in wheres if w[0] == f"{stem}.py" and str(w[1]) == number and len(w) > 2 and w[2]), None)
    if where is None or enclosing_function(path, where[2]) in ("", helper):
        return None
    return helper, where[2]


def shape_made_in_passing_helper(diagnosis: Diagnosis, stem: str, run: ProbeRun, runs: list[ProbeRun],
                                 folder: Path | None) -> None:
    """For an error whose wrong shape is first made inside a function of the module that passes every
    check of its own, called from another of its functions: the calling line is shown as where the
    shape goes wrong (the helper is right; what it is given is not), with the caller's statements before
    it that keep nothing of what they compute on a name the call passes (``valid_lens.reshape(-1)``
    alone on its line: :func:`~grader.diagnosis.mechanism.dropped_results`)."""
    if folder is None or not diagnosis.origin.startswith(f"{stem}.py, line "):
        return
    path = Path(folder) / f"{stem}.py"
    number = diagnosis.origin.split(", line ")[1].split(" ")[0].rstrip(",")
    steps, _ = parse_shapes(run.shapes)
    called = _helper_called(path, stem, number, [s.where for s in steps.values()], _passing_functions(runs))
    if called is None:
        return
    helper, calling = called
    diagnosis.origin, diagnosis.origin_code = f"{stem}.py, line {calling}", statement_at(path, calling)
    diagnosis.notes.append(f"line {number} is in {helper}, which passes every check that calls it; line {calling} "
                           f"calls it with what makes the shape go wrong: what the call gives it is where it goes wrong")
    diagnosis.made = []  # what the helper's line uses: the helper is right
    diagnosis.notes += [note for note in dropped_results(path, calling) if note not in diagnosis.notes]


def passing_helper(diagnosis: Diagnosis, stem: str, first: tuple, runs: list[ProbeRun], folder: Path | None) -> None:
    """When the line shown for the first differing step (or the origin) is inside a function of the
    module that passes every check of its own, and another function's line called it there: that
    calling line is where it goes wrong (the helper is right; calling it, or what it is given,
    is not). The helper's line stays as the note's; the calling line is shown instead."""
    if folder is None:
        return
    path = Path(folder) / f"{stem}.py"
    passing = _passing_functions(runs)
    if not passing:
        return
    _, _, steps, reference_steps = first
    for attribute in ("where", "origin"):
        shown = getattr(diagnosis, attribute)
        if not shown.startswith(f"{stem}.py, line "):
            continue
        number = shown.split(", line ")[1].split(",")[0].split(" ")[0]
        called = _helper_called(path, stem, number, [s.where for s in steps], passing)
        if called is None:
            continue
        helper, calling = called
        # A call whose result is one the reference computes is right: what follows it differs (a step
        # missing after it), never the call.
        made = [s for s in steps if s.where[0] == f"{stem}.py" and str(s.where[1]) == number and s.where[2] == calling][-1]
        if isinstance(made.value, torch.Tensor) and KnownValues(reference_steps).matching(made.value, exact=True):
            continue
        setattr(diagnosis, attribute, f"{stem}.py, line {calling}")
        setattr(diagnosis, "code" if attribute == "where" else "origin_code", statement_at(path, calling))
        note = (f"is in {helper}, which passes every check that calls it; line {calling} calls it where the first "
                f"value that differs is made: the call (which function it calls, or what it gives it) is where it "
                f"goes wrong")
        if not any(n.endswith(note) for n in diagnosis.notes):
            diagnosis.notes.append(f"line {number} {note}")
            # The helper's own lines are right: not listed as what the value is computed from; what the
            # call gives it besides the values the walk followed is (self.num_heads, a number).
            diagnosis.inputs = [line for line in diagnosis.inputs if not line.split(":")[0].removeprefix("line ").isdigit()
                                or enclosing_function(path, int(line.split(":")[0].removeprefix("line "))) != helper]
            uses_made(diagnosis, stem, f"{stem}.py, line {calling}", statement_at(path, calling),
                      computed_lines([s.where for s in steps], stem), folder)
    if diagnosis.origin and diagnosis.origin == diagnosis.where:
        diagnosis.origin, diagnosis.origin_code = "", ""
