"""A computation without tensors (BLEU): the line of the first wrong number.

The trace records the Python numbers the student's lines assign (:func:`grader.diagnosis.sent.numbers_with_lines`);
held against the reference's on the same input, in order, the first number of theirs that the
reference never computes (or that a confirmed catalog mistake computes) is shown with its line, only
where what that line reads is proven to be the reference's.
"""

from __future__ import annotations

from pathlib import Path

from grader.diagnosis import catalog
from grader.diagnosis.sent import AssignedNumber, ProbeRun, numbers_with_lines
from grader.diagnosis.student_lines import line_at, uses_made
from grader.model import Diagnosis


def number_line(diagnosis: Diagnosis, stem: str, source, runs: list[ProbeRun], folder: Path | None) -> None:
    """A computation without tensors (BLEU) whose mistake the catalog confirmed: the student's line
    that assigns the first number the confirmed mistake computes and the reference never does (on
    the same input, the very same number), shown as the line that computes the result. Proven by
    values: nothing is shown when no line of theirs holds that number (another order of the same
    mistaken computation)."""
    if folder is None or not hasattr(source, "numbers"):
        return
    mistakes = catalog.confirmed(source, stem, [(r.probe, r.kwargs, r.student) for r in runs])
    for run in (r for r in runs if r.failed):
        mine = numbers_with_lines(run.student)
        reference = source.numbers(stem, None, run.probe, run.kwargs) if mine else []
        if not reference:
            continue
        for name, _ in mistakes:
            theirs = source.numbers(stem, name, run.probe, run.kwargs)
            wrong = next((v for v in theirs if not any(_same_number(v, r) for r in reference)), None)
            hit = next((n for n in mine if wrong is not None and _same_number(n.value, wrong)), None)
            if hit is not None:
                ours = numbers_with_lines(source.result(stem, None, run.probe, run.kwargs))
                named = {n.name: [m.value for m in ours if m.name == n.name] for n in ours}
                if _where_numbers_part(mine, ours, named, hit) != (hit, None):
                    return  # the numbers part from the reference's before it: that line is not proven
                diagnosis.where, diagnosis.code = line_at(hit.where, folder, stem)
                if diagnosis.where:
                    uses_made(diagnosis, stem, diagnosis.where, diagnosis.code, set(), folder)  # precision = ...
                    diagnosis.notes.append(f"line {hit.where[1]} assigns {hit.name} the first number that this mistake "
                                           f"computes and the reference never does (on the first check that fails)")
                    return


def first_unknown_number(diagnosis: Diagnosis, stem: str, source, runs: list[ProbeRun], folder: Path | None) -> None:
    """A computation without tensors (BLEU) whose mistake no catalog entry confirms: on the first
    failing check that recorded numbers, the student's first line that assigns a number the
    reference never computes on the same input (any of its numbers, in any order), shown as the line
    where the first wrong number is computed; nothing when every number of theirs is one of the
    reference's (the result alone differs)."""
    if folder is None or not hasattr(source, "numbers"):
        return
    for run in (r for r in runs if r.failed):
        mine = numbers_with_lines(run.student)
        reference = source.numbers(stem, None, run.probe, run.kwargs) if mine else []
        if not reference:
            continue
        # A name the reference assigns too (score, len_pred) is compared with that name's values alone
        # (with its one value, where both assign it once); any other with all of the reference's numbers.
        theirs = numbers_with_lines(source.result(stem, None, run.probe, run.kwargs))
        named = {name: [n.value for n in theirs if n.name == name] for name in {n.name for n in theirs}}

        hit = next((n for n in mine if _unknown_number(n, mine, named, reference)), None)
        if hit is None:
            return
        hit, expected = _where_numbers_part(mine, theirs, named, hit)
        if hit is None:
            return
        at, code = line_at(hit.where, folder, stem)
        if at:
            diagnosis.where, diagnosis.code = at, code
            value = int(hit.value) if float(hit.value).is_integer() else round(hit.value, 4)
            if expected is None:
                diagnosis.notes.append(f"line {hit.where[1]} assigns {hit.name} = {value}, the first number of yours that "
                                       f"the reference never computes on the same input (the first check that fails); "
                                       f"every number your code assigns before it, the reference computes too")
            else:
                wanted = int(expected) if float(expected).is_integer() else round(expected, 4)
                diagnosis.notes.append(f"line {hit.where[1]} assigns {hit.name} = {value} where the reference, at the same "
                                       f"point on the same input (the first check that fails), has {hit.name} = {wanted}; "
                                       f"every number your code assigns before it is the reference's, in the same order")
        return


def _where_numbers_part(mine: list[AssignedNumber], theirs: list[AssignedNumber], named: dict,
                        hit: AssignedNumber) -> tuple[AssignedNumber | None, float | None]:
    """A line is shown only when what it reads is the reference's: every number of a name both assign,
    up to it, is the reference's, in the same order. Where the two first part before ``hit`` (the
    student's number to show), the number where they part is shown instead if its statement assigns
    the same name another number (what it reads agrees, its own result differs), with the reference's
    number there; if they part by taking another path (a loop that runs once less), no line is proven
    and none is shown: ``(None, None)``. Else ``(hit, None)``."""
    shared = {n.name for n in mine} & set(named)
    ours = [n for n in mine if n.name in shared]
    refs = [n for n in theirs if n.name in shared]
    part = next((k for k, (a, b) in enumerate(zip(ours, refs)) if a.name != b.name or not _same_number(a.value, b.value)), None)
    if part is None or mine.index(ours[part]) > mine.index(hit):
        return hit, None
    # The same statement on both sides: the lines paired by the numbers that agree before it.
    paired = {}
    for a, b in zip(ours[:part], refs[:part]):
        paired.setdefault(("mine", a.where[1]), b.where[1])
        paired.setdefault(("theirs", b.where[1]), a.where[1])
    a, b = ours[part], refs[part]
    same_statement = (paired.get(("mine", a.where[1]), b.where[1]) == b.where[1]
                      and paired.get(("theirs", b.where[1]), a.where[1]) == a.where[1])
    if a.name != b.name or not same_statement:  # another path (a loop run another number of times)
        return None, None
    return (hit, None) if a is hit else (a, b.value)


def _unknown_number(n: AssignedNumber, mine: list[AssignedNumber], named: dict, reference: list) -> bool:
    """Whether the student's number ``n`` is one the reference never computes:
    against its one value where both assign that name once, against that name's values where the
    reference assigns it, else against all of the reference's numbers."""
    values = named.get(n.name)
    if values and len(values) == 1 and sum(1 for m in mine if m.name == n.name) == 1:
        return not _same_number(n.value, values[0])
    return not any(_same_number(n.value, r) for r in (values or reference))


def _same_number(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))
