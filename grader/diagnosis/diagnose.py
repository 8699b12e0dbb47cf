"""One diagnosis per exercise module with failing checks (trusted side).

For a module whose checks failed: the concepts of the catalog's mistakes that reproduce the
student's results (:func:`grader.diagnosis.catalog.confirm`); then, for the first failing check, either
the exception explained (:mod:`grader.diagnosis.explain`) or the first step of the computation where
the student's values leave the reference's (:mod:`grader.diagnosis.localize`). Nothing here imports
student code: it reads the values the sandbox sent and the text of the taken files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from grader.diagnosis import catalog
from grader.diagnosis.shown import as_grid, fmt, fmt_pair
from grader.diagnosis.explain import explain, source_line
from grader.diagnosis.localize import OUTPUT, first_difference, shape_departure
from grader.diagnosis.relations import relation
from grader.model import Diagnosis


@dataclass
class ProbeRun:
    """One probe of a module: what it called, and what the student's code gave."""

    nodeid: str
    probe: str
    kwargs: dict
    # The decoded value (``{"$traced": ..., "steps": ...}`` for traced probes) or, when the
    # student's code raised, ``catalog.failure(type, message)``; None: no result at all.
    student: object
    where: str = ""  # where student code raised, when it did
    failed: bool = False  # the test of this probe did not pass
    checked: str = ""  # what that test checked
    feedback: dict | None = None  # that test's feedback (expected and actual values)
    shapes: str = ""  # when the student's code raised: the shapes of its steps until then (see probing)


def output_of(value):
    """The tensor a traced probe's value stands for (its output), else None."""
    value = catalog.unwrap(value)
    if isinstance(value, dict):
        value = value.get("out", value.get("output", value.get("result")))
    if isinstance(value, list) and value and isinstance(value[0], torch.Tensor):
        value = value[0]
    return value if isinstance(value, torch.Tensor) else None


def steps_of(value) -> list | None:
    """The recorded steps of a traced probe's value, as ``[label, tensor, [file, line]]``, else None."""
    if isinstance(value, dict) and "$traced" in value and isinstance(value.get("steps"), list):
        return [[s[0], s[1], _where_of(s[2] if len(s) == 3 else None)] for s in value["steps"]
                if isinstance(s, list) and len(s) in (2, 3) and isinstance(s[1], torch.Tensor)]
    return None


def _where_of(value) -> list:
    """``[file, line]`` of a step (checked: the sandbox sent it), else ``["", 0]``."""
    if (isinstance(value, list) and len(value) == 2 and isinstance(value[0], str) and type(value[1]) is int
            and value[1] > 0):
        return value
    return ["", 0]


def line_at(where: list, folder: Path | None, stem: str) -> tuple[str, str]:
    """``("causal.py, line 42", that line's code)`` for a step's ``[file, line]``; ("", "") if unknown
    or in another file than the diagnosed module's own (``stem``.py): a step made in a helper module
    the student's code calls (their own ``causal.py`` or ``masked_softmax.py``) is that module's,
    and its line would point the student at the wrong file."""
    name, number = where
    if not name or not number or name != f"{stem}.py":
        return "", ""
    at = f"{name}, line {number}"
    return at, source_line(at, folder)


def diagnose(stem: str, source, runs: list[ProbeRun], folder: Path | None) -> Diagnosis | None:
    """The diagnosis of one module from its probe runs (see the module docstring)."""
    if not any(run.failed for run in runs):
        return None
    usable = [run for run in runs if run.student is not None]
    diagnosis = Diagnosis()
    if source is not None:
        diagnosis.concepts = catalog.confirm(source, stem, [(r.probe, r.kwargs, r.student) for r in usable])
    localized = []  # (run, localization, the student's steps) of every failed run with steps
    for run in runs:
        if not run.failed or run.student is None:
            continue
        error = run.student if isinstance(run.student, dict) and "$error" in run.student else None
        error = error or _returned_error(run.student)
        if error:
            if localized:
                break
            explained = explain(error["$error"], error["message"], run.where or error.get("where", ""), folder)
            diagnosis.error = f"{explained.kind}: {explained.meaning or error['message'][:200]}"
            diagnosis.where, diagnosis.code, diagnosis.checked = explained.where, explained.code, run.checked
            if explained.concept and explained.concept not in diagnosis.concepts:
                diagnosis.concepts.append(explained.concept)
            _shape_origin(diagnosis, stem, source, run, error, folder)
            break
        steps = steps_of(run.student)
        if steps is None or source is None:
            continue
        reference = source.result(stem, None, run.probe, run.kwargs)
        reference_steps = steps_of(reference)
        if reference_steps is None:
            continue
        found = first_difference(reference_steps, output_of(reference), steps, output_of(run.student))
        if found is not None:
            localized.append((run, found, steps, reference_steps))
    if localized and not diagnosis.error:
        _show_step(diagnosis, stem, localized, folder)
    if not (diagnosis.stage or diagnosis.error):
        _result_differs(diagnosis, runs)
    if not (diagnosis.concepts or diagnosis.stage or diagnosis.error):
        return None
    return diagnosis


def _show_step(diagnosis: Diagnosis, stem: str, localized: list, folder: Path | None) -> None:
    """The first failed run's first differing step: its values, the student's line that computed
    it, and a relation that holds at that step on every run that differs there."""
    run, found, steps, reference_steps = localized[0]
    diagnosis.stage, diagnosis.checked = found.stage, run.checked
    if found.actual is not None:
        diagnosis.expected, diagnosis.actual = fmt_pair(found.expected, found.actual)
        if found.step is not None:
            diagnosis.where, diagnosis.code = line_at(steps[found.step][2], folder, stem)
    else:
        diagnosis.expected = fmt(found.expected)
        departs = shape_departure(reference_steps, steps) if found.stage != OUTPUT else None
        same_shape = any(tuple(step[1].shape) == tuple(found.expected.shape) for step in steps)
        diagnosis.actual = "no step of your code gives this value" if same_shape else "no step of your code gives this shape"
        if departs is not None:
            diagnosis.actual = f"no step of yours has this shape; yours: {fmt(steps[departs][1])}"
            diagnosis.where, diagnosis.code = line_at(steps[departs][2], folder, stem)
    if is_weights(found.expected):
        diagnosis.expected_grid = as_grid(found.expected)
        diagnosis.actual_grid = as_grid(found.actual) if found.actual is not None else None
    # The same kind of relation on every run that differs (its number may depend on the probe's sizes).
    said = [relation(place, place.actual) if place.actual is not None else "" for _, place, _, _ in localized]
    kinds = {text.split(":")[-1] if "times" in text else text for text in said}
    if said[0] and len(kinds) == 1 and all(place.stage == found.stage for _, place, _, _ in localized):
        diagnosis.relation = said[0]


def _shape_origin(diagnosis: Diagnosis, stem: str, source, run: ProbeRun, error: dict, folder: Path | None) -> None:
    """For an error: the student's first step whose shape the reference never makes, when it is
    on another line than the one that raised (``run.shapes``, sent with the steps)."""
    shapes = parse_shapes(run.shapes)
    if not shapes or source is None:
        return
    reference_steps = steps_of(source.result(stem, None, run.probe, run.kwargs))
    if not reference_steps:
        return
    departs = shape_departure(reference_steps, shapes)
    if departs is None:
        return
    at, code = line_at(shapes[departs][2], folder, stem)
    if at and at != diagnosis.where.split(", in ")[0]:
        shape = tuple(shapes[departs][1])
        diagnosis.origin, diagnosis.origin_code = f"{at} (a step of shape {shape}, which the reference never makes)", code


def parse_shapes(text) -> list:
    """The steps' labels, shapes and lines sent with an error (``"view|6x2@mha.py:30"``), as
    ``[label, shape, [file, line]]``; [] for anything else."""
    if not isinstance(text, str):
        return []
    found = []
    for token in text.split()[:200]:
        label, _, rest = token.partition("|")
        shape, _, where = rest.partition("@")
        name, _, line = where.rpartition(":")
        try:
            dims = [] if shape == "s" else [int(n) for n in shape.split("x")]
            found.append([label.replace("_", " "), dims, _where_of([name, int(line)])])
        except ValueError:
            return []
    return found


def _result_differs(diagnosis: Diagnosis, runs: list[ProbeRun]) -> None:
    """Without recorded steps, the first failing check's own values: its result is what differs."""
    for run in runs:
        feedback = run.feedback or {}
        if run.failed and (feedback.get("expected") or feedback.get("actual")):
            diagnosis.stage, diagnosis.checked = "result", feedback.get("checked") or run.checked
            diagnosis.expected, diagnosis.actual = feedback.get("expected", ""), feedback.get("actual", "")
            diagnosis.expected_grid, diagnosis.actual_grid = feedback.get("expected_grid"), feedback.get("actual_grid")
            return


def is_weights(t: torch.Tensor) -> bool:
    """A square matrix of values in [0, 1] (attention weights): drawn as a shaded grid."""
    if t.dim() < 2 or t.shape[-1] != t.shape[-2]:
        return False
    return bool(torch.isfinite(t).all()) and bool(((t >= 0) & (t <= 1 + 1e-6)).all())


def _returned_error(value) -> dict | None:
    """An error a probe caught and returned (``{"error": "Type: message (where)"}``)."""
    value = catalog.unwrap(value)
    text = value.get("error") if isinstance(value, dict) else None
    if not isinstance(text, str) or not text:
        return None
    kind, _, rest = text.partition(": ")
    where = ""
    if rest.endswith(")") and " (" in rest:
        rest, _, where = rest.rpartition(" (")
        where = where[:-1]
    return {"$error": kind, "message": rest, "where": where}
