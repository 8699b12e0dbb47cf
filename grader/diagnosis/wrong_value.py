"""Where the first wrong value was made, said to the student.

:func:`grader.diagnosis.origin.value_origin` walks back from the differing step to the step that first
makes a value the reference never computes; this module turns that step into the diagnosis's origin
line and its notes (a result computed and dropped, an operation applied twice, a mask inverted, a
reshape where the reference permutes, a whole tensor reduced, a parameter holding another's values),
checked against what the trace cannot see (``.T`` followed through unrecorded).
"""

from __future__ import annotations

from pathlib import Path

import torch

from grader.diagnosis import catalog
from grader.diagnosis.known_values import KnownValues
from grader.diagnosis.origin import Origin, applied_twice, discarded, operation_of, reordered, value_origin
from grader.diagnosis.reductions import reduced_along, reduced_instead, whole_reduction
from grader.diagnosis.sent import floating
from grader.diagnosis.source_text import MAX_LINES, transposed_at
from grader.diagnosis.stages import OUTPUT, stages
from grader.diagnosis.student_lines import called_into, computed_lines, entered_at, line_at, uses_made
from grader.model import Diagnosis
from grader.sandbox.protocol import Step
from grader.sandbox.trace import OUTSIDE


def show_value_origin(diagnosis: Diagnosis, stem: str, found, steps: list[Step], start: int | None, reference_steps: list[Step],
                      output, folder: Path | None, proven=(), sound: frozenset = frozenset()) -> None:
    """Where the first value of the student's that the reference never computes was made, walking
    back from the student's step at the differing stage (``start``, an index of ``steps``: all of
    them, masks and lengths too), else from their output, when it is on another line than the one
    shown for that stage. If that line computes from values the reference combines too, the lines
    that make what it uses besides (attributes, numbers); else the lines that made what it was
    computed from. An output that is one of the reference's named steps is said so."""
    if start is None:
        if not isinstance(output, torch.Tensor):
            return
        holding = [i for i, s in enumerate(steps) if s.value.is_floating_point()
                   and tuple(s.value.shape) == tuple(output.shape) and catalog.same_tensor(s.value, output)]
        if not holding:  # no step of theirs computed it (an input returned as it came)
            _output_is_a_stage(diagnosis, stem, found, None, reference_steps, output, folder)
            return
        start = holding[-1]
    extra = [found.expected] if found.stage == OUTPUT else []
    origin = value_origin(steps, start, reference_steps, extra, parts=found.parts_along, proven=proven)
    if origin is None:
        _output_is_a_stage(diagnosis, stem, found, steps[start], reference_steps, output, folder)
        return
    origin, transposed = _through_transposes(origin, steps, reference_steps, folder, stem)
    at, code = line_at(steps[origin.step].where, folder, stem)
    if transposed and at:
        diagnosis.notes.append(f"{at.split(', ')[-1]} transposes ({transposed}) a value the reference computes; the "
                               f"reference never computes it transposed")
    own = [p for p in steps[origin.step].parents if type(p) is str and p != OUTSIDE]
    if not at and (not own or steps[origin.step].where[0] in sound):  # made in a helper module of theirs from what
        # this module's call passed it alone (not from the helper's own weights, which its construction may have sized
        # otherwise, unless that module passed every check of its own): that call's line
        called = called_into(steps[origin.step], stem, sound)
        at, code = line_at(called or steps[entered_at(steps, origin.step, stem)].where, folder, stem)
    if not at:
        return
    _dropped_or_repeated(diagnosis, stem, origin, steps, reference_steps, output, folder, at)
    if at != diagnosis.where:
        diagnosis.origin, diagnosis.origin_code = at, code
        # Inputs that are the reference's own tensors are said so ("value"), not where one is its mask inverted
        # (said in a note) or a tensor of the module's that is not compared ("uses").
        diagnosis.origin_kind = ("uses" if origin.same_inputs and (origin.attributes or origin.inverted) else
                                 "value" if origin.same_inputs else "combination" if origin.inputs_known else "inputs")
    _inverted_reordered_or_reduced(diagnosis, stem, origin, steps, reference_steps, folder, at)
    if origin.same_inputs:
        uses_made(diagnosis, stem, at, code, computed_lines([step.where for step in steps], stem), folder)
        return
    _inputs_made(diagnosis, stem, origin, steps, reference_steps, folder, at)


def _dropped_or_repeated(diagnosis: Diagnosis, stem: str, origin: Origin, steps: list[Step], reference_steps: list[Step], output,
                         folder: Path | None, at: str) -> None:
    """Notes on the origin's line ``at``: a result computed and dropped on the way to it, and an
    operation it applies to a value that already holds the reference's result of that operation."""
    for j in discarded(steps, origin.step, reference_steps, output):  # a result computed and dropped on the way
        dropped_at, dropped_code = line_at(steps[j].where, folder, stem)
        if dropped_at and dropped_at != at:
            shown = dropped_code.strip().replace("( ", "(").replace(" )", ")")
            note = (f"{dropped_at.split(', ')[-1]} ({shown}) computes a value and nothing of yours uses "
                    f"its result: it is computed and never used, while the reference goes on with that value; "
                    f"{at.split(', ')[-1]} reads what it was computed from, unchanged")
            if note not in diagnosis.notes:
                diagnosis.notes.append(note)
            break
    if origin.same_inputs and (twice := applied_twice(steps, origin.step, reference_steps)) is not None:
        made, made_code = line_at(steps[twice].where, folder, stem)
        operation = operation_of(steps[origin.step].label)
        verb, noun = TWICE.get(operation, (f"applies {operation} to", operation))
        made_by = f" (made at {made.split(', ')[-1]}: {made_code.strip()})" if made and made != at and made_code else ""
        diagnosis.notes.append(f"{at.split(', ')[-1]} {verb} a value that already equals what the reference has after "
                               f"its own {noun}{made_by}: your code applies the {noun} twice, the reference once")


def _inverted_reordered_or_reduced(diagnosis: Diagnosis, stem: str, origin: Origin, steps: list[Step],
                                   reference_steps: list[Step], folder: Path | None, at: str) -> None:
    """Notes on the origin's line ``at``: a mask it uses that is the reference's inverted, a reshape
    that leaves the entries in another shape's order (a permute is meant), a whole tensor reduced
    to one number where the reference reduces along one dimension."""
    for i in origin.inverted:  # a mask of the entries kept: said, beside the line that uses it
        made, made_code = line_at(steps[i].where, folder, stem)
        if made:
            diagnosis.notes.append(f"{made.split(', ')[-1]} ({made_code.strip()}) gives the reference's mask inverted: "
                                   f"True exactly where the reference's mask is False")
    if steps[origin.step].label in ("reshape", "view") and (moved := reordered(steps[origin.step].value, reference_steps)):
        shape, order = moved
        diagnosis.notes.append(
            f"{at.split(', ')[-1]} gives shape {tuple(steps[origin.step].value.shape)} with the entries in the order they "
            f"have in shape {shape} ({steps[origin.step].label} never moves an entry to another dimension); the reference's "
            f"tensor of shape {tuple(steps[origin.step].value.shape)} is the one of shape {shape} with its dimensions "
            f"reordered: .permute{order}")
    if whole_reduction(steps, origin.step):
        parent = next(p for p in steps[origin.step].parents if type(p) is int)
        ways = reduced_along(reference_steps, steps[origin.step].label, steps[parent].value)
        if len(ways) == 1:
            diagnosis.notes.append(f"{at.split(', ')[-1]} reduces a whole tensor of shape "
                                   f"{tuple(steps[parent].value.shape)} to one number ({steps[origin.step].label} over every "
                                   f"entry); " + reduced_instead(tuple(steps[parent].value.shape), *ways[0]))


def _inputs_made(diagnosis: Diagnosis, stem: str, origin: Origin, steps: list[Step], reference_steps: list[Step],
                 folder: Path | None, at: str) -> None:
    """For an origin computed from values the reference never combines so: the lines that made them
    (and, for a value made from the module's own tensors alone, the lines that make those), with a
    parameter that holds another's values said."""
    if not diagnosis.origin and origin.inputs_known:  # the line shown combines values the reference has: said so
        diagnosis.origin_kind = "combination"
    # The reference's values, looked up for products with a parameter (x @ W_key) among the inputs.
    known = KnownValues(reference_steps) if any(steps[i].label.startswith("x @ ") for i in origin.inputs) else None
    for i in origin.inputs:
        made, made_code = line_at(steps[i].where, folder, stem)
        line = f"{made.split(', ')[-1]}: {made_code}"
        if made and made != at and made_code and line not in diagnosis.inputs:
            diagnosis.inputs.append(line)
            _parameter_holds_another(diagnosis, steps[i], reference_steps, known, made, made_code)
        # A value made from the module's own tensors alone (self.mask sliced), which the reference never
        # has: what the module keeps is where it differs; the lines that make that attribute are shown.
        own = [p for p in steps[i].parents if type(p) is str and p != OUTSIDE]
        if own and len(own) == len(steps[i].parents) and made and made_code and not diagnosis.made:
            uses_made(diagnosis, stem, made, made_code, computed_lines([step.where for step in steps], stem), folder)
            diagnosis.made = [line for line in diagnosis.made if line.split(":")[0].removeprefix("self.") in own]
    diagnosis.inputs = diagnosis.inputs[:MAX_LINES]


def _through_transposes(origin, steps: list[Step], reference_steps: list[Step], folder: Path | None, stem: str):
    """The walk's origin, checked against what the trace cannot see: it follows ``.T`` (``.mT``, ``.H``,
    ``.mH``) through as the same value, so a step assigned as ``mask = expr.T`` holds ``expr``'s value,
    and a line reading ``x.T`` is recorded as computed from ``x``. Where the walk's claim that a line is
    computed from the reference's values rests on such a value, and its transpose is none of the
    reference's values: a parent assigned transposed on a line of its own is where the first wrong
    value is made (that line, and ``.T`` named); a transpose read on the origin's own line leaves the
    line, but not the claim about its inputs. With what was transposed (``".T"``), else ""."""
    if folder is None or not origin.same_inputs:
        return origin, ""
    path, values = Path(folder) / f"{stem}.py", KnownValues(reference_steps)

    def flipped_unknown(p: int) -> bool:
        value = steps[p].value
        if value.dim() < 2 or value.numel() <= 1:
            return False
        flips = [value.mT] + ([value.permute(*reversed(range(value.dim())))] if value.dim() > 2 else [])
        return all(not (tuple(t.shape) == tuple(value.shape) and catalog.same_tensor(t, value))
                   and not values.matching(t, exact=True) for t in flips)

    step = steps[origin.step]
    parents = sorted({p for p in step.parents if type(p) is int and 0 <= p < origin.step})
    for p in parents:
        where = steps[p].where
        attribute = transposed_at(path, where[1])[0] if where[0] == f"{stem}.py" and where[1] else ""
        if attribute and where[1] != step.where[1] and flipped_unknown(p):
            return Origin(p, False, [], inputs_known=False), f".{attribute}"
    if (step.where[0] == f"{stem}.py" and step.where[1] and transposed_at(path, step.where[1])[1]
            and any(flipped_unknown(p) for p in parents)):
        return Origin(origin.step, False, [], inputs_known=False), ""
    return origin, ""


def _output_is_a_stage(diagnosis: Diagnosis, stem: str, found, step: Step | None, reference_steps: list[Step], output,
                       folder: Path | None) -> None:
    """When the student's output is the reference's value of another named step (the weights
    returned instead of the context vectors), say which, and where the student computed it."""
    if not isinstance(output, torch.Tensor) or found.stage != OUTPUT and found.actual is not None:
        return
    for stage in stages(floating(reference_steps), None):
        if tuple(stage.value.shape) == tuple(output.shape) and catalog.same_tensor(stage.value, output):
            diagnosis.relation = f"your output is the reference's {stage.name}"
            if not diagnosis.where and step is not None:
                diagnosis.where, diagnosis.code = line_at(step.where, folder, stem)
            return


def _parameter_holds_another(diagnosis: Diagnosis, step: Step, reference_steps: list[Step], known: KnownValues | None,
                             at: str, code: str) -> None:
    """A product with one of the module's parameters (``x @ W_key``) whose value is the reference's
    product with another of them (``x @ W_value``), on the same inputs and seed: said, with both names
    (the parameter holds the other's values: made in another order, or given the other's). ``known``:
    the reference's values (:class:`KnownValues` of ``reference_steps``)."""
    mine = step.label
    if known is None or not mine.startswith("x @ ") or not isinstance(step.value, torch.Tensor):
        return
    theirs = {reference_steps[r].label for r in known.matching(step.value, exact=True) if r >= 0}
    others = sorted(label for label in theirs if label.startswith("x @ ") and label != mine)
    if others and mine not in theirs:
        note = (f"{at.split(', ')[-1]} ({code.strip()}) gives what the reference's {others[0]} gives, on the same "
                f"inputs and seed: your {mine[4:]} holds the values the reference's {others[0][4:]} holds")
        if note not in diagnosis.notes:
            diagnosis.notes.append(note)


# How a repeated operation is said (applied_twice): the verb on the line, the noun of the operation.
TWICE = {"div": ("divides", "division"), "mul": ("multiplies", "multiplication")}
