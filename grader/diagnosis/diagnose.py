"""One diagnosis per exercise module with failing checks (trusted side).

For a module whose checks failed: the concepts of the catalog's mistakes that reproduce the
student's results (:func:`grader.diagnosis.catalog.confirm`); then, for the first failing check, either
the exception explained (:mod:`grader.diagnosis.explain`) or the first step of the computation where
the student's values leave the reference's (:mod:`grader.diagnosis.localize`), shown with where it
went wrong first (:mod:`grader.diagnosis.differing_step`, :mod:`grader.diagnosis.shape_error`). Without
recorded steps: the result's own values, or the line of the first wrong number
(:mod:`grader.diagnosis.plain_numbers`). Nothing here imports student code: it reads the values the
sandbox sent (:mod:`grader.diagnosis.sent`) and the text of the taken files.
"""

from __future__ import annotations

from pathlib import Path

import torch

from grader.diagnosis import catalog
from grader.diagnosis.differing_step import show_step
from grader.diagnosis.explain import explain
from grader.diagnosis.localize import first_difference
from grader.diagnosis.mechanism import single_return
from grader.diagnosis.misspellings import attributes_kept_apart, misspelled_methods, misspelled_names
from grader.diagnosis.passing_helper import passing_helper, shape_made_in_passing_helper
from grader.diagnosis.plain_numbers import first_unknown_number, number_line
from grader.diagnosis.sent import ProbeRun, floating, output_of, returned_error, steps_of
from grader.diagnosis.shape_error import called_from, entered_from, show_shape_origin
from grader.model import Diagnosis
from grader.sandbox.protocol import FAILED, is_failure


def diagnose(stem: str, source, runs: list[ProbeRun], folder: Path | None, sound: frozenset = frozenset()) -> Diagnosis | None:
    """The diagnosis of one module from its probe runs (see the module docstring). ``sound``: the
    files of the student's other modules whose every check passed in the same run (``causal.py``,
    whose class the public check of ``mha`` runs)."""
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
        error = run.student if is_failure(run.student) else None
        error = error or returned_error(run.student)
        if error:
            if localized:
                break
            _error_explained(diagnosis, stem, source, run, runs, error, folder)
            break
        if (found := _first_difference(stem, source, run)) is not None:
            localized.append(found)
    if localized and not diagnosis.error:
        show_step(diagnosis, stem, localized, folder, output_of(source.result(stem, None, localized[0][0].probe,
                                                                                 localized[0][0].kwargs)),
                  _sound_for(localized[0][0], sound))
        passing_helper(diagnosis, stem, localized[0], runs, folder)
        _one_line_behind_the_concepts(diagnosis, stem, localized, runs, folder, source, sound)
    if not (diagnosis.stage or diagnosis.error):
        _result_differs(diagnosis, runs)
        if source is not None and not diagnosis.relation:
            _reshaped_result(diagnosis, stem, source, [r for r in usable if r.failed])
        if diagnosis.concepts and source is not None:
            number_line(diagnosis, stem, source, usable, folder)
        if not diagnosis.where and source is not None:
            first_unknown_number(diagnosis, stem, source, usable, folder)
        if not diagnosis.where:
            _factory_line(diagnosis, stem, runs, folder)
    elif diagnosis.stage and not (diagnosis.where or diagnosis.origin):  # a step of another file of theirs, no line
        _factory_line(diagnosis, stem, runs, folder)
    if folder is not None and (diagnosis.stage or diagnosis.error or diagnosis.concepts):  # a name read, misspelled
        _names_misspelled(diagnosis, stem, runs, folder)
    if not (diagnosis.concepts or diagnosis.stage or diagnosis.error):
        return None
    return diagnosis


def _error_explained(diagnosis: Diagnosis, stem: str, source, run: ProbeRun, runs: list[ProbeRun], error: dict,
                     folder: Path | None) -> None:
    """The first failing check raised: the exception explained (its kind, meaning, line and a concept
    where unambiguous), where its wrong shape was made, the line of this module that led there, and a
    method Python looks for, written under a near name."""
    explained = explain(error[FAILED], error["message"], run.where or error.get("where", ""), folder)
    diagnosis.error = f"{explained.kind}: {explained.meaning or error['message'][:200]}"
    diagnosis.where, diagnosis.code, diagnosis.checked = explained.where, explained.code, run.checked
    if explained.concept and explained.concept not in diagnosis.concepts:
        diagnosis.concepts.append(explained.concept)
    show_shape_origin(diagnosis, stem, source, run, folder)
    shape_made_in_passing_helper(diagnosis, stem, run, runs, folder)
    entered_from(diagnosis, stem, run.entered, folder)
    called_from(diagnosis, stem, run.called, folder)
    if folder is not None:
        diagnosis.notes += misspelled_methods(Path(folder) / f"{stem}.py", str(error.get("message", "")))


def _first_difference(stem: str, source, run: ProbeRun) -> tuple | None:
    """``(run, localization, the student's steps, the reference's steps)`` for a run whose steps were
    recorded and differ from the reference's; None otherwise."""
    steps = steps_of(run.student)
    if steps is None or source is None:
        return None
    reference = source.result(stem, None, run.probe, run.kwargs)
    reference_steps = steps_of(reference)
    if reference_steps is None:
        return None
    found = first_difference(floating(reference_steps), output_of(reference), floating(steps), output_of(run.student))
    return (run, found, steps, reference_steps) if found is not None else None


def _names_misspelled(diagnosis: Diagnosis, stem: str, runs: list[ProbeRun], folder: Path) -> None:
    """A name the failing checks read that the student's file defines one slip away, or keeps apart
    in two attributes: noted."""
    read = " ".join([diagnosis.checked, diagnosis.error, *diagnosis.concepts, *(r.checked for r in runs if r.failed),
                     *(str((r.feedback or {}).get("checked", "")) for r in runs if r.failed)])
    notes = misspelled_names(Path(folder) / f"{stem}.py", read) + attributes_kept_apart(Path(folder) / f"{stem}.py", read)
    diagnosis.notes += [n for n in notes if n not in diagnosis.notes]


def _factory_line(diagnosis: Diagnosis, stem: str, runs: list[ProbeRun], folder: Path | None) -> None:
    """A factory of one line (``return MultiHeadAttentionWrapper(d_in, 2, ...)``) that every failing
    check calls: that line computes the result (what it builds, and with which arguments)."""
    if folder is None:
        return
    failed = [run for run in runs if run.failed]
    lines = {single_return(Path(folder) / f"{stem}.py", run.checked or "") for run in failed}
    single = lines.pop() if len(lines) == 1 else None  # every failing check is of that factory
    if single is not None:
        diagnosis.where, diagnosis.code = f"{stem}.py, line {single[0]}", single[1]
        diagnosis.stage = diagnosis.stage or "result"
        diagnosis.checked = diagnosis.checked or failed[0].checked


def _sound_for(run: ProbeRun, sound: frozenset) -> frozenset:
    """``sound`` where the probe built a class of the module itself (``cls=`` or ``name=``, with the
    book's arguments): what that class built from the student's sound modules (its heads) was sized
    by the class's own code, so a step made there is the class's; else none (a factory that builds
    the class with other arguments, Exercise 3.2's, sizes it at its own call: nothing is mapped)."""
    kwargs = run.kwargs if isinstance(run.kwargs, dict) else {}
    return sound if isinstance(kwargs.get("cls") or kwargs.get("name"), str) else frozenset()


def _one_line_behind_the_concepts(diagnosis: Diagnosis, stem: str, localized: list, runs: list[ProbeRun],
                                  folder: Path | None, source, sound: frozenset = frozenset()) -> None:
    """Catalog mistakes confirmed together, each reproducing the student's results on its own probes,
    are two mistakes only where they are made at two places: when the first value the reference never
    computes is made at one and the same line of the student's on every failed check (a 1-D and a 2-D
    valid_lens both paired with the wrong rows by one ``.t()``), that line is the one mistake, and
    naming the catalog's mistakes, each true on some inputs, would tell two stories: none is named,
    the line is shown."""
    if len(diagnosis.concepts) < 2 or folder is None or source is None:
        return
    failed = [run for run in runs if run.failed]
    if len(localized) != len(failed) or len(localized) < 2:  # a failed check the walk cannot follow: unknown
        return
    lines = set()
    for entry in localized:
        alone = Diagnosis()
        show_step(alone, stem, [entry], folder, output_of(source.result(stem, None, entry[0].probe, entry[0].kwargs)),
                  _sound_for(entry[0], sound))
        lines.add(alone.origin or alone.where)
    if len(lines) == 1 and "" not in lines:
        diagnosis.concepts = []


def _reshaped_result(diagnosis: Diagnosis, stem: str, source, runs: list[ProbeRun]) -> None:
    """A result of another shape holding the expected values in the same order, on every failing
    check whose result is a tensor: said with both shapes (the same numbers, not laid back into the
    expected shape). Nothing when a check's result is another one."""
    said = []
    for run in runs:
        yours, expected = output_of(run.student), output_of(source.result(stem, None, run.probe, run.kwargs))
        if not (isinstance(yours, torch.Tensor) and isinstance(expected, torch.Tensor)):
            continue
        if (tuple(yours.shape) == tuple(expected.shape) or yours.numel() != expected.numel()
                or not catalog.same_tensor(yours.reshape(expected.shape), expected)):
            return
        said.append((tuple(yours.shape), tuple(expected.shape)))
    if said:
        mine, wanted = said[0]
        diagnosis.relation = (f"yours holds the expected values in the same order, in shape {mine} instead of "
                              f"{wanted}: the result is not given the expected shape")


def _result_differs(diagnosis: Diagnosis, runs: list[ProbeRun]) -> None:
    """Without recorded steps, the first failing check's own values: its result is what differs."""
    for run in runs:
        feedback = run.feedback or {}
        if run.failed and (feedback.get("expected") or feedback.get("actual")):
            diagnosis.stage, diagnosis.checked = "result", feedback.get("checked") or run.checked
            diagnosis.expected, diagnosis.actual = feedback.get("expected", ""), feedback.get("actual", "")
            diagnosis.expected_grid, diagnosis.actual_grid = feedback.get("expected_grid"), feedback.get("actual_grid")
            return
