"""The first differing step, shown: its values, the student's line that computed it, and what follows.

:func:`grader.diagnosis.localize.first_difference` finds the stage where the student's values leave
the reference's; :func:`show_step` fills the diagnosis from it for the first failed run: the expected
and actual values, the line, a relation that holds on every run that differs there
(:mod:`grader.diagnosis.relations`), then hands on to the walks that say where the first wrong value
was made (:mod:`grader.diagnosis.wrong_value`), entries left unwritten (:mod:`grader.diagnosis.unwritten`)
and a wrong join (:mod:`grader.diagnosis.shape_error`).
"""

from __future__ import annotations

from pathlib import Path

import torch

from grader.diagnosis import catalog
from grader.diagnosis.localize import shape_departure
from grader.diagnosis.mechanism import unused_values
from grader.diagnosis.origin import FOR_SHAPE
from grader.diagnosis.relations import factor_of, is_weights, relation, size_factor
from grader.diagnosis.sent import floating, given_tensors, output_of
from grader.diagnosis.shape_error import joined_wrong
from grader.diagnosis.shown import as_grid, fmt, fmt_pair
from grader.diagnosis.source_text import transposed_at
from grader.diagnosis.stages import OUTPUT, Localization, Stage, stages
from grader.diagnosis.student_lines import called_into, entered_at, line_at
from grader.diagnosis.tolerance import ATOL
from grader.diagnosis.unwritten import unwritten
from grader.diagnosis.wrong_value import show_value_origin
from grader.model import Diagnosis
from grader.sandbox.protocol import ShapeStep, Step


def show_step(diagnosis: Diagnosis, stem: str, localized: list, folder: Path | None, expected_output=None,
              sound: frozenset = frozenset()) -> None:
    """The first failed run's first differing step: its values, the student's line that computed
    it, where the first value the reference never computes was made, and a relation that holds at
    that step on every run that differs there."""
    run, found, all_steps, reference_steps = localized[0]
    at_float = [i for i, step in enumerate(all_steps) if step.value.is_floating_point()]
    steps = [all_steps[i] for i in at_float]
    output = output_of(run.student)
    diagnosis.stage, diagnosis.checked = found.stage, run.checked
    if found.missing_part:  # nothing of theirs computes it: the line computing the other parts, and no walk back
        _missing_part(diagnosis, stem, run, found, all_steps, at_float, output, expected_output, folder)
        return
    if found.actual is not None:
        actual = found.actual
        if found.step is not None:
            diagnosis.where, diagnosis.code = line_at(steps[found.step].where, folder, stem)
            if not diagnosis.where and (called := called_into(steps[found.step], stem, sound)) is not None:
                diagnosis.where, diagnosis.code = line_at(called, folder, stem)
            actual = _as_its_line_leaves_it(actual, found.expected, steps[found.step].where, folder, stem, diagnosis)
        diagnosis.expected, diagnosis.actual = fmt_pair(found.expected, actual)
    else:
        _no_step_gives(diagnosis, stem, found, all_steps, at_float, reference_steps, output, folder, sound)
    start = at_float[found.step] if found.step is not None and found.step < len(at_float) else None
    proven = [at_float[k] for k in found.matched if k < len(at_float)]  # steps holding the stages matched
    show_value_origin(diagnosis, stem, found, all_steps, start, reference_steps, output, folder, proven, sound)
    unwritten(diagnosis, stem, found, all_steps, output, folder, given_tensors(run.kwargs))
    _expected_computed_and_dropped(diagnosis, stem, found, all_steps, output, folder, given_tensors(run.kwargs))
    if (isinstance(output, torch.Tensor) and isinstance(expected_output, torch.Tensor)
            and tuple(output.shape) != tuple(expected_output.shape)):  # a wrong shape: made by a join?
        _joined_into_output(diagnosis, stem, found, all_steps, reference_steps, output, expected_output, folder)
    if folder is not None:  # a line the walk went through that drops what it computes (a new state)
        _walked_lines_dropping(diagnosis, stem, folder)
    if is_weights(found.expected) and found.expected.shape[-1] == found.expected.shape[-2]:  # square: drawn as a grid
        diagnosis.expected_grid = as_grid(found.expected)
        diagnosis.actual_grid = as_grid(found.actual) if found.actual is not None else None
    _relation_on_every_run(diagnosis, found, localized)


def _missing_part(diagnosis: Diagnosis, stem: str, run, found, all_steps: list[Step], at_float: list[int], output,
                  expected_output, folder: Path | None) -> None:
    """A part of the stage that nothing of theirs computes: the line computing the other parts (of
    this module: the line that called into a helper module of theirs), and no walk back; rows of the
    output still holding what they were filled with."""
    steps = [all_steps[i] for i in at_float]
    diagnosis.expected = fmt(found.expected)
    diagnosis.actual = "no step of yours computes this part"
    diagnosis.where, diagnosis.code = line_at(steps[found.step].where, folder, stem)
    if not diagnosis.where:  # computed in a helper module of theirs: the line of this module that called it
        entered = entered_at(all_steps, at_float[found.step], stem)
        diagnosis.where, diagnosis.code = line_at(all_steps[entered].where, folder, stem)
    if isinstance(expected_output, torch.Tensor):  # rows of the output still holding what they were filled with
        unwritten(diagnosis, stem, Localization(OUTPUT, expected_output, None), all_steps, output, folder,
                  given_tensors(run.kwargs))


def _no_step_gives(diagnosis: Diagnosis, stem: str, found, all_steps: list[Step], at_float: list[int],
                   reference_steps: list[Step], output, folder: Path | None, sound: frozenset) -> None:
    """No step of theirs plays the stage: said by value or by shape; where the first step of a
    shape the reference never makes is known (and no concept is confirmed), that step and its line."""
    steps = [all_steps[i] for i in at_float]
    diagnosis.expected = fmt(found.expected)
    departs = shape_departure(floating(reference_steps), steps) if found.stage != OUTPUT else None
    while departs is not None and _for_its_shape_only(all_steps, at_float[departs]):  # zeros_like(x[..., :1])
        later = shape_departure(floating(reference_steps), steps[departs + 1:])
        departs = None if later is None else departs + 1 + later
    shapes = [tuple(step.value.shape) for step in steps] + ([tuple(output.shape)] if output is not None else [])
    same_shape = tuple(found.expected.shape) in shapes
    diagnosis.actual = "no step of your code gives this value" if same_shape else "no step of your code gives this shape"
    if departs is not None and not diagnosis.concepts:  # a guess: never beside a confirmed concept
        diagnosis.actual = f"no step of yours has this shape; yours: {fmt(steps[departs].value)}"
        diagnosis.where, diagnosis.code = line_at(steps[departs].where, folder, stem)
        if not diagnosis.where and (called := called_into(steps[departs], stem, sound)) is not None:
            diagnosis.where, diagnosis.code = line_at(called, folder, stem)


def _joined_into_output(diagnosis: Diagnosis, stem: str, found, all_steps: list[Step], reference_steps: list[Step], output,
                        expected_output, folder: Path | None) -> None:
    """An output of the wrong shape made by a wrong join: shown as where it goes wrong, in place of
    the lines the walk gave (and of the line of the first shape the reference never makes)."""
    holding = [i for i, s in enumerate(all_steps) if tuple(s.value.shape) == tuple(output.shape)
               and catalog.same_tensor(s.value, output)]
    shapes = {i: ShapeStep(s.label, list(s.value.shape), s.where, s.parents) for i, s in enumerate(all_steps)}
    if holding and joined_wrong(diagnosis, stem, shapes, holding[-1:], reference_steps,
                                tuple(expected_output.shape), folder):
        diagnosis.inputs, diagnosis.made = [], []
        if found.actual is None:  # the line shown came from the first shape the reference never makes
            diagnosis.where, diagnosis.code = "", ""


def _walked_lines_dropping(diagnosis: Diagnosis, stem: str, folder: Path) -> None:
    """A line the walk went through that drops what it computes (a new state, in a loop): noted; a
    combination shown is then dropped, the note says where it comes from."""
    walked = [diagnosis.where, diagnosis.origin, *(f"{stem}.py, {line.split(':')[0]}" for line in diagnosis.inputs)]
    numbers = [int(at.split(", line ")[1].split(",")[0].split(" ")[0]) for at in walked
               if at.startswith(f"{stem}.py, line ") and at.split(", line ")[1].split(",")[0].split(" ")[0].isdigit()]
    dropped = unused_values(Path(folder) / f"{stem}.py", numbers)
    if dropped and diagnosis.origin_kind == "combination":
        # Values the reference computes, combined as it never does, in a loop whose passes all read
        # the same value: the combination follows from the value never renewed, the note says where.
        diagnosis.origin, diagnosis.origin_code, diagnosis.inputs = "", "", []
    diagnosis.notes += dropped


def _relation_on_every_run(diagnosis: Diagnosis, found, localized: list) -> None:
    """The same kind of relation on every run that differs (its number may depend on the probe's sizes)."""
    said = [relation(place, place.actual) if place.actual is not None else "" for _, place, _, _ in localized]
    kinds = {_relation_kind(text) for text in said}
    same_stage = all(place.stage == found.stage for _, place, _, _ in localized)
    # An order (columns, heads) is said with the order the shown run has, where every run that differs
    # holds its expected values so, at whatever stage it differs first (transpose_output alone, or
    # inside the attention that uses it): the same fact on every run, never one run's coincidence.
    if said[0] and len(kinds) == 1 and (same_stage or " in another order (" in said[0]):
        diagnosis.relation = said[0] if "a constant factor" not in said[0] else _factor_said(said[0], localized)
    elif same_stage and any("a constant factor" in text for text in said):
        # Another kind said on some run (a factor of 1 there: "this step is missing") while a factor in
        # the sizes still holds on every run: said in those sizes, never as one run's number.
        by_sizes = _factor_said(next(t for t in said if "a constant factor" in t), localized)
        diagnosis.relation = by_sizes if "A =" in by_sizes else ""


def _relation_kind(text: str) -> str:
    """What a relation says, without the numbers of the run it was found on: a factor's sizes, an
    order's indices (``"... columns in another order"``)."""
    if "times" in text:
        return text.split(":")[-1]
    if " in another order (" in text:
        return text.split(" in another order (")[0]
    return text


def _factor_said(said: str, localized: list) -> str:
    """A constant factor, said only in terms the code can act on: in the sizes it is made of when one
    pair of sizes gives it on every run that differs (dividing by the square root of the number of
    tokens instead of d_k); as a number only when it is the same number on runs whose sizes differ
    (a true constant); else nothing (a number true of one input alone tempts a hard-coded constant)."""
    factors = [factor_of(place.expected, place.actual) or _one_ratio(place.expected, place.actual)
               for _, place, _, _ in localized]
    if any(c is None for c in factors):
        return ""
    sizes = []
    for _, place, _, reference_steps in localized:
        named: dict[str, int] = {}
        for stage in [*stages(floating(reference_steps), None), Stage(place.stage, place.expected)]:
            short, dims = stage.name.split(" (")[0], stage.value.dim()
            for d in range(dims):
                named.setdefault(f"the last dimension of the {short}" if d == dims - 1 else
                                 f"dimension {d} of the {short}", int(stage.value.shape[d]))
        sizes.append(named)
    by_sizes = size_factor(factors, sizes)
    if by_sizes:
        return by_sizes
    constant = all(abs(c - factors[0]) <= ATOL * max(1.0, abs(factors[0])) for c in factors)
    varied = len({tuple(sorted(s.items())) for s in sizes}) > 1
    return said if constant and varied else ""


def _one_ratio(expected, yours) -> float | None:
    """``yours / expected`` on a check too small for :func:`factor_of` (one entry, a single token):
    no evidence of a factor by itself, but a factor in the sizes must hold there too."""
    if not isinstance(yours, torch.Tensor) or yours.shape != expected.shape or yours.numel() > 2:
        return None
    e, y = expected.double().flatten(), yours.double().flatten()
    if not (torch.isfinite(e).all() and torch.isfinite(y).all()) or not (e.abs() > 1e-3).all():
        return None
    ratios = y / e
    c = float(ratios[0])
    return c if bool(torch.isclose(ratios, torch.full_like(ratios, c), rtol=1e-4).all()) and abs(c - 1) >= 1e-3 else None


def _as_its_line_leaves_it(actual, expected, where: list, folder: Path | None, stem: str, diagnosis: Diagnosis):
    """The student's value as the line that computes it leaves it: a statement that transposes its
    whole result with ``.T`` (``return (values.T @ w).T``), which the trace follows through unrecorded,
    gives the transpose; shown so (with a note) where only that has the expected shape, never a shape
    the line does not make."""
    if (folder is None or where[0] != f"{stem}.py" or not where[1] or not isinstance(actual, torch.Tensor)
            or actual.dim() < 2 or tuple(actual.shape) == tuple(expected.shape)
            or tuple(actual.mT.shape) != tuple(expected.shape)):
        return actual
    attribute = transposed_at(Path(folder) / f"{stem}.py", where[1])[0]
    if not attribute:
        return actual
    diagnosis.notes.append(f"line {where[1]} transposes its result as a whole (.{attribute}): yours is shown as the "
                           f"line leaves it, of shape {tuple(actual.mT.shape)}")
    return actual.mT


def _for_its_shape_only(steps: list[Step], i: int) -> bool:
    """Whether every step computed from ``steps[i]`` reads only its shape (``torch.zeros_like``): a
    value made to size a tensor to write into, never itself a wrong value or a wrong shape to show."""
    users = [s for s in steps if i in s.parents]
    return bool(users) and all(s.label.split("[")[0] in FOR_SHAPE for s in users)


def _expected_computed_and_dropped(diagnosis: Diagnosis, stem: str, found, steps: list[Step], output, folder: Path | None,
                                   given: tuple) -> None:
    """When the student's output is a tensor the probe gave, unchanged, and a step of theirs holds
    exactly the expected output while nothing of theirs uses it (``X.masked_fill(mask, value)`` on
    a line of its own, then ``return X``): that line, said with both facts."""
    if (found.stage != OUTPUT or not isinstance(output, torch.Tensor) or not isinstance(found.expected, torch.Tensor)
            or not any(tuple(g.shape) == tuple(output.shape) and catalog.same_tensor(g, output) for g in given)):
        return
    used = {p for s in steps for p in s.parents if type(p) is int}
    for j, step in enumerate(steps):
        if (j not in used and tuple(step.value.shape) == tuple(found.expected.shape)
                and catalog.same_tensor(step.value, found.expected)):
            at, code = line_at(step.where, folder, stem)
            if at:
                shown = code.strip()
                diagnosis.notes.append(f"{at.split(', ')[-1]} ({shown}) computes exactly the expected value, and nothing "
                                       f"of yours uses its result: yours is the tensor the call gave, unchanged")
            return
