"""One diagnosis per exercise module with failing checks (trusted side).

For a module whose checks failed: the concepts of the catalog's mistakes that reproduce the
student's results (:func:`grader.diagnosis.catalog.confirm`); then, for the first failing check, either
the exception explained (:mod:`grader.diagnosis.explain`) or the first step of the computation where
the student's values leave the reference's (:mod:`grader.diagnosis.localize`). Nothing here imports
student code: it reads the values the sandbox sent and the text of the taken files.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import torch

from grader.diagnosis import catalog
from grader.diagnosis.shown import as_grid, fmt, fmt_pair
from grader.diagnosis.explain import explain
from grader.diagnosis.mechanism import (attributes_kept_apart, dropped_results, enclosing_function, enclosing_loop, loop_indexing, misspelled_methods, misspelled_names,
                                        single_return, unused_values)
from grader.diagnosis.localize import OUTPUT, Localization, Stage, first_difference, shape_departure, stages
from grader.diagnosis.origin import (COPIES, MAX_LINES, KnownValues, REDUCTIONS, applied_twice, called_on, discarded, first_unknown_shape, made_at, operation_of, reduced_along, shape_origin, statement_at, value_origin,
                                     whole_reduction, transposed_at, Origin, wrong_join, reordered, FOR_SHAPE)
from grader.sandbox.trace import OUTSIDE
from grader.diagnosis.relations import factor_of, relation, size_factor
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
    entered: str = ""  # when it raised in another of their files: the line of this module's file that led there
    called: str = ""  # when it raised in a function of this file called from another of its lines: the outermost


def output_of(value):
    """The tensor a traced probe's value stands for (its output; the first of its outputs; else the
    first tensor of the probe's dict, which each probe puts first: ``{"context": ..., "weights": ...}``), else None."""
    value = catalog.unwrap(value)
    if isinstance(value, dict):
        named = [value[key] for key in ("out", "output", "result", "outs") if key in value]
        value = named[0] if named else next((v for v in value.values() if isinstance(v, torch.Tensor)), None)
    if isinstance(value, list) and value and isinstance(value[0], torch.Tensor):
        value = value[0]
    return value if isinstance(value, torch.Tensor) else None


def steps_of(value) -> list | None:
    """The recorded steps of a traced probe's value, as ``[label, tensor, [file, line], parents]``,
    else None (checked: the sandbox sent them; a step that is not well formed counts as absent,
    and the indices of the parents as they were sent, which only :mod:`origin` reads)."""
    if isinstance(value, dict) and "$traced" in value and isinstance(value.get("steps"), list):
        return [[s[0], s[1], _where_of(s[2] if len(s) > 2 else None), _parents_of(s[3] if len(s) > 3 else None)]
                for s in value["steps"] if isinstance(s, list) and 2 <= len(s) <= 4 and isinstance(s[1], torch.Tensor)]
    return None


def _parents_of(value) -> list:
    """A step's parents (step indices and attribute names), checked; [] for anything else."""
    if not isinstance(value, list):
        return []
    return [p for p in value[:16] if (type(p) is int and p >= 0) or (type(p) is str and p.isidentifier() and len(p) <= 40)]


def _where_of(value) -> list:
    """``[file, line, calling line]`` of a step (checked: the sandbox sent it; the calling line may
    be absent or 0), else ``["", 0, 0]``; with a fourth number when sent (a step made in another
    file of the student's: the line of the diagnosed module that called into it, 0 if none)."""
    if (isinstance(value, list) and len(value) in (2, 3, 4) and isinstance(value[0], str)
            and all(type(n) is int and n >= 0 for n in value[1:]) and value[1] > 0):
        return [value[0], value[1], value[2] if len(value) >= 3 else 0] + ([value[3]] if len(value) == 4 else [])
    return ["", 0, 0]


def _called_into(step: list, stem: str, sound: frozenset = frozenset()) -> list | None:
    """For a step made in another file of the student's (their own ``masked_softmax.py``) from what
    the diagnosed module passed it alone, or from that file's module's own weights where that file
    is ``sound`` (every check of its own passed: its construction sizes them as the reference's does,
    from what the diagnosed module passed it): the where of the line of ``stem``.py that called into
    it, the line the hidden grade shows (its reference module is no file of the student's); else None."""
    where = step[2]
    if len(where) < 4 or not where[3] or where[0] == f"{stem}.py":
        return None
    if where[0] not in sound and any(type(p) is str and p != OUTSIDE for p in (step[3] if len(step) > 3 else ())):
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
            _shape_made_in_passing_helper(diagnosis, stem, run, runs, folder)
            _entered_from(diagnosis, stem, run.entered, folder)
            _called_from(diagnosis, stem, run.called, folder)
            if folder is not None:
                diagnosis.notes += misspelled_methods(Path(folder) / f"{stem}.py", str(error.get("message", "")))
            break
        steps = steps_of(run.student)
        if steps is None or source is None:
            continue
        reference = source.result(stem, None, run.probe, run.kwargs)
        reference_steps = steps_of(reference)
        if reference_steps is None:
            continue
        found = first_difference(floating(reference_steps), output_of(reference), floating(steps), output_of(run.student))
        if found is not None:
            localized.append((run, found, steps, reference_steps))
    if localized and not diagnosis.error:
        _show_step(diagnosis, stem, localized, folder, output_of(source.result(stem, None, localized[0][0].probe,
                                                                                  localized[0][0].kwargs)),
                   _sound_for(localized[0][0], sound))
        _passing_helper(diagnosis, stem, localized[0], runs, folder)
        _one_line_behind_the_concepts(diagnosis, stem, localized, runs, folder, source, sound)
    if not (diagnosis.stage or diagnosis.error):
        _result_differs(diagnosis, runs)
        if source is not None and not diagnosis.relation:
            _reshaped_result(diagnosis, stem, source, [r for r in usable if r.failed])
        if diagnosis.concepts and source is not None:
            _number_line(diagnosis, stem, source, usable, folder)
        if not diagnosis.where and source is not None:
            _first_unknown_number(diagnosis, stem, source, usable, folder)
        if not diagnosis.where:
            _factory_line(diagnosis, stem, runs, folder)
    elif diagnosis.stage and not (diagnosis.where or diagnosis.origin):  # a step of another file of theirs, no line
        _factory_line(diagnosis, stem, runs, folder)
    if folder is not None and (diagnosis.stage or diagnosis.error or diagnosis.concepts):  # a name read, misspelled
        read = " ".join([diagnosis.checked, diagnosis.error, *diagnosis.concepts, *(r.checked for r in runs if r.failed),
                         *(str((r.feedback or {}).get("checked", "")) for r in runs if r.failed)])
        notes = misspelled_names(Path(folder) / f"{stem}.py", read) + attributes_kept_apart(Path(folder) / f"{stem}.py", read)
        diagnosis.notes += [n for n in notes if n not in diagnosis.notes]
    if not (diagnosis.concepts or diagnosis.stage or diagnosis.error):
        return None
    return diagnosis


def _expected_computed_and_dropped(diagnosis: Diagnosis, stem: str, found, steps: list, output, folder: Path | None,
                                   given: tuple) -> None:
    """When the student's output is a tensor the probe gave, unchanged, and a step of theirs holds
    exactly the expected output while nothing of theirs uses it (``X.masked_fill(mask, value)`` on
    a line of its own, then ``return X``): that line, said with both facts."""
    if (found.stage != OUTPUT or not isinstance(output, torch.Tensor) or not isinstance(found.expected, torch.Tensor)
            or not any(tuple(g.shape) == tuple(output.shape) and catalog.same_tensor(g, output) for g in given)):
        return
    used = {p for s in steps for p in (s[3] if len(s) > 3 else ()) if type(p) is int}
    for j, step in enumerate(steps):
        if (j not in used and tuple(step[1].shape) == tuple(found.expected.shape)
                and catalog.same_tensor(step[1], found.expected)):
            at, code = line_at(step[2], folder, stem)
            if at:
                shown = code.strip()
                diagnosis.notes.append(f"{at.split(', ')[-1]} ({shown}) computes exactly the expected value, and nothing "
                                       f"of yours uses its result: yours is the tensor the call gave, unchanged")
            return


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
        _show_step(alone, stem, [entry], folder, output_of(source.result(stem, None, entry[0].probe, entry[0].kwargs)),
                   _sound_for(entry[0], sound))
        lines.add(alone.origin or alone.where)
    if len(lines) == 1 and "" not in lines:
        diagnosis.concepts = []


def _show_step(diagnosis: Diagnosis, stem: str, localized: list, folder: Path | None, expected_output=None,
               sound: frozenset = frozenset()) -> None:
    """The first failed run's first differing step: its values, the student's line that computed
    it, where the first value the reference never computes was made, and a relation that holds at
    that step on every run that differs there."""
    run, found, all_steps, reference_steps = localized[0]
    at_float = [i for i, step in enumerate(all_steps) if step[1].is_floating_point()]
    steps = [all_steps[i] for i in at_float]
    output = output_of(run.student)
    diagnosis.stage, diagnosis.checked = found.stage, run.checked
    if found.missing_part:  # nothing of theirs computes it: the line computing the other parts, and no walk back
        diagnosis.expected = fmt(found.expected)
        diagnosis.actual = "no step of yours computes this part"
        diagnosis.where, diagnosis.code = line_at(steps[found.step][2], folder, stem)
        if not diagnosis.where:  # computed in a helper module of theirs: the line of this module that called it
            entered = _entered_at(all_steps, at_float[found.step], stem)
            diagnosis.where, diagnosis.code = line_at(all_steps[entered][2], folder, stem)
        if isinstance(expected_output, torch.Tensor):  # rows of the output still holding what they were filled with
            _unwritten(diagnosis, stem, Localization(OUTPUT, expected_output, None), all_steps, output, folder,
                       _given_tensors(run.kwargs))
        return
    if found.actual is not None:
        actual = found.actual
        if found.step is not None:
            diagnosis.where, diagnosis.code = line_at(steps[found.step][2], folder, stem)
            if not diagnosis.where and (called := _called_into(steps[found.step], stem, sound)) is not None:
                diagnosis.where, diagnosis.code = line_at(called, folder, stem)
            actual = _as_its_line_leaves_it(actual, found.expected, steps[found.step][2], folder, stem, diagnosis)
        diagnosis.expected, diagnosis.actual = fmt_pair(found.expected, actual)
    else:
        diagnosis.expected = fmt(found.expected)
        departs = shape_departure(floating(reference_steps), steps) if found.stage != OUTPUT else None
        while departs is not None and _for_its_shape_only(all_steps, at_float[departs]):  # zeros_like(x[..., :1])
            later = shape_departure(floating(reference_steps), steps[departs + 1:])
            departs = None if later is None else departs + 1 + later
        shapes = [tuple(step[1].shape) for step in steps] + ([tuple(output.shape)] if output is not None else [])
        same_shape = tuple(found.expected.shape) in shapes
        diagnosis.actual = "no step of your code gives this value" if same_shape else "no step of your code gives this shape"
        if departs is not None and not diagnosis.concepts:  # a guess: never beside a confirmed concept
            diagnosis.actual = f"no step of yours has this shape; yours: {fmt(steps[departs][1])}"
            diagnosis.where, diagnosis.code = line_at(steps[departs][2], folder, stem)
            if not diagnosis.where and (called := _called_into(steps[departs], stem, sound)) is not None:
                diagnosis.where, diagnosis.code = line_at(called, folder, stem)
    start = at_float[found.step] if found.step is not None and found.step < len(at_float) else None
    proven = [at_float[k] for k in found.matched if k < len(at_float)]  # steps holding the stages matched
    _value_origin(diagnosis, stem, found, all_steps, start, reference_steps, output, folder, proven, sound)
    _unwritten(diagnosis, stem, found, all_steps, output, folder, _given_tensors(run.kwargs))
    _expected_computed_and_dropped(diagnosis, stem, found, all_steps, output, folder, _given_tensors(run.kwargs))
    if (isinstance(output, torch.Tensor) and isinstance(expected_output, torch.Tensor)
            and tuple(output.shape) != tuple(expected_output.shape)):  # a wrong shape: made by a join?
        holding = [i for i, s in enumerate(all_steps) if tuple(s[1].shape) == tuple(output.shape)
                   and catalog.same_tensor(s[1], output)]
        shapes = {i: [s[0], tuple(s[1].shape), s[2], s[3]] for i, s in enumerate(all_steps)}
        if holding and _joined_wrong(diagnosis, stem, shapes, holding[-1:], reference_steps,
                                     tuple(expected_output.shape), folder):
            diagnosis.inputs, diagnosis.made = [], []
            if found.actual is None:  # the line shown came from the first shape the reference never makes
                diagnosis.where, diagnosis.code = "", ""
    if folder is not None:  # a line the walk went through that drops what it computes (a new state)
        walked = [diagnosis.where, diagnosis.origin, *(f"{stem}.py, {line.split(':')[0]}" for line in diagnosis.inputs)]
        numbers = [int(at.split(", line ")[1].split(",")[0].split(" ")[0]) for at in walked
                   if at.startswith(f"{stem}.py, line ") and at.split(", line ")[1].split(",")[0].split(" ")[0].isdigit()]
        dropped = unused_values(Path(folder) / f"{stem}.py", numbers)
        if dropped and diagnosis.origin_kind == "combination":
            # Values the reference computes, combined as it never does, in a loop whose passes all read
            # the same value: the combination follows from the value never renewed, the note says where.
            diagnosis.origin, diagnosis.origin_code, diagnosis.inputs = "", "", []
        diagnosis.notes += dropped
    if is_weights(found.expected):
        diagnosis.expected_grid = as_grid(found.expected)
        diagnosis.actual_grid = as_grid(found.actual) if found.actual is not None else None
    # The same kind of relation on every run that differs (its number may depend on the probe's sizes).
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


def _joined_wrong(diagnosis: Diagnosis, stem: str, steps: dict, start: list, reference_steps: list, expected,
                  folder: Path | None) -> bool:
    """A ``torch.cat`` / ``torch.stack`` of the student's, on the way to what differs (``start``), that
    makes a shape the reference never makes from pieces of the right shape (see
    :func:`grader.diagnosis.origin.wrong_join`): shown as where the wrong shape is made, with a note
    saying what it joins, and, for a wrong number of pieces made in a loop, that loop's line. True
    when shown."""
    if folder is None:
        return False
    join = wrong_join(steps, start, reference_steps, expected)
    if join is None:
        return False
    at, code = line_at(steps[join.step][2], folder, stem)
    if not at:
        return False
    number = int(at.split(", line ")[1].split(" ")[0])
    diagnosis.origin, diagnosis.origin_code, diagnosis.origin_kind = (
        f"{at} (a step of shape {join.shape}, which the reference never makes)", code, "shape")
    what = "stacks" if steps[join.step][0] == "stack" else "joins"
    pieces = f"{join.count} piece{'s' if join.count != 1 else ''} of shape {join.piece}"
    if join.expected_dim != join.dim:
        diagnosis.notes.append(
            f"line {number} {what} {pieces} along dimension {join.dim}, giving shape {join.shape}; the reference "
            f"{what} {join.count} pieces of this shape along dimension {join.expected_dim}, giving shape {join.expected}")
        return True
    if join.dim_known:
        note = (f"line {number} {what} {pieces} along dimension {join.dim}, giving shape {join.shape}; the reference's "
                f"shape {join.expected} has {join.expected_count} such pieces along that dimension")
    else:  # the shapes fit a join along more than one dimension: none is named
        note = (f"line {number} {what} {pieces}, giving shape {join.shape}; the reference's shape {join.expected} "
                f"has {join.expected_count} such pieces")
    path = Path(folder) / f"{stem}.py"
    join_loop = enclosing_loop(path, number)
    loops = set()
    for p in join.pieces:
        where = steps[p][2]
        if where[0] != f"{stem}.py":
            continue
        loop = next((found for n in where[1:3] if n and (found := enclosing_loop(path, n)) is not None), None)
        loops.add(loop)
    loop = loops.pop() if len(loops) == 1 else None
    if loop is not None and loop != join_loop:
        note += (f": the pieces are made in the loop at line {loop[0]} ({loop[1]}), which made {join.count} of them "
                 f"where {join.expected_count} are needed")
    diagnosis.notes.append(note)
    return True


def _unwritten(diagnosis: Diagnosis, stem: str, found, steps: list, output, folder: Path | None,
               given: tuple = ()) -> None:
    """A tensor filled with one number, or copied from what the code was given (``X.clone()``), or
    given and written into as it came (``X[r, n:] = value``), then written into (``context[i] =
    ...``, ``scores[i, j, n:] = -1e6`` in a loop), whose entries that differ from the expected value
    all still hold what the tensor started with, every other entry being the expected one: which
    slices along one dimension (else which entries), the line that made the tensor and the loop that
    writes into it (a bound off by one). Yours is the step shown for the stage, else the output;
    ``given``: the tensors the probe gave, as they were before the student's code ran."""
    yours = found.actual if found.actual is not None else output
    if folder is None or not isinstance(yours, torch.Tensor) or tuple(yours.shape) != tuple(found.expected.shape):
        return
    actual, expected = yours.double(), found.expected.double()
    differs = ~torch.isclose(actual, expected, atol=1e-4, rtol=0, equal_nan=True)
    if not differs.any() or differs.all() or actual.dim() == 0:
        return
    final = next((i for i in range(len(steps) - 1, -1, -1) if steps[i][0] == "__setitem__"
                  and tuple(steps[i][1].shape) == tuple(actual.shape) and catalog.same_tensor(steps[i][1], yours)), None)
    if final is None:
        return
    seen, frontier, start, outside = set(), [final], None, False
    while frontier:
        i = frontier.pop()
        if i in seen or not 0 <= i < len(steps):
            continue
        seen.add(i)
        parents = [p for p in steps[i][3] if type(p) is int and p < i]
        value = steps[i][1]
        if not parents and tuple(value.shape) == tuple(actual.shape) and value.numel() > 1 and (
                bool((value == value.flatten()[0]).all()) or operation_of(steps[i][0]) in COPIES):
            start = i
        outside |= steps[i][0] == "__setitem__" and not parents and OUTSIDE in steps[i][3]
        frontier.extend(parents)
    began_with = None
    if start is not None:
        began_with = steps[start][1].double()
    elif outside:  # written into as it was given: what it held then is the probe's own tensor
        held = [t.double() for t in given if isinstance(t, torch.Tensor) and t.is_floating_point()
                and tuple(t.shape) == tuple(actual.shape)
                and torch.isclose(actual[differs], t.double()[differs], atol=1e-6, rtol=0).all()]
        began_with = held[0] if len(held) == 1 else None
    if began_with is None or not torch.isclose(actual[differs], began_with[differs], atol=1e-6, rtol=0).all():
        return
    where = _left_as_they_were(differs, actual, began_with)
    if where is None:
        return
    what, dim = where
    path = Path(folder) / f"{stem}.py"
    written = steps[final][2][1] if steps[final][2][0] == f"{stem}.py" else 0
    if not written:
        return
    loop = loop_indexing(path, written, dim) if dim is not None else enclosing_loop(path, written)
    if start is not None:
        made, made_code = line_at(steps[start][2], folder, stem)
        if not made:
            return
        code = made_code.split('   (called at')[0]
        held_text = (f"the value {made.split(', ')[-1]} filled the tensor with ({code})"
                     if bool((began_with == began_with.flatten()[0]).all()) else
                     f"what {made.split(', ')[-1]} copied into the tensor ({code})")
    else:
        held_text = "the values your code was given there"
    if loop is not None:
        diagnosis.notes.append(
            f"{what} of yours still hold {held_text}, and every other entry is the expected one: the loop at "
            f"line {loop[0]} ({loop[1]}) writes into it at line {written} and leaves them as they were")
    else:  # not the loop's variable that indexes them (a slice's bound): the line that writes, alone
        diagnosis.notes.append(
            f"{what} of yours still hold {held_text}, and every other entry is the expected one: line "
            f"{written} ({statement_at(path, written)}) writes into it and never into them")


def _left_as_they_were(differs: torch.Tensor, actual: torch.Tensor, began_with: torch.Tensor):
    """Where the differing entries lie, all holding what the tensor began with: whole slices along
    one dimension (``("Rows [5]", 0)``), else the diagonal of a square matrix, else a few entries
    (``("Entries [0, 0], [1, 1]", None)``); None for more than a few scattered entries."""
    for dim in range(actual.dim()):
        per = differs.movedim(dim, 0).reshape(actual.shape[dim], -1).any(1)
        if bool(per.all()):
            continue
        left = per.nonzero().flatten().tolist()
        if all(torch.isclose(actual.select(dim, k), began_with.select(dim, k), atol=1e-6, rtol=0).all() for k in left):
            return _slices(actual, dim, left), dim
    places = differs.nonzero().tolist()
    if actual.dim() == 2 and actual.shape[0] == actual.shape[1] and places == [[k, k] for k in range(actual.shape[0])]:
        return "The diagonal entries", None
    if len(places) <= 4:
        return "Entries " + ", ".join(str(p) for p in places), None
    return None


def _slices(t: torch.Tensor, dim: int, indices: list[int]) -> str:
    """Slices of ``t`` along ``dim`` by name: "Rows [5]", "Columns [0, 1]", "The entries at index [1] of dimension 0"."""
    if dim == t.dim() - 1 and t.dim() > 1:
        return f"Columns {indices}"
    if dim == t.dim() - 2 or t.dim() == 1:
        return f"Rows {indices}"
    return f"The entries at index {indices} of dimension {dim}"


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


def _shape_made_in_passing_helper(diagnosis: Diagnosis, stem: str, run: ProbeRun, runs: list[ProbeRun],
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
    steps, _ = parse_failure(run.shapes)
    called = _helper_called(path, stem, number, [s[2] for s in steps.values()], _passing_functions(runs))
    if called is None:
        return
    helper, calling = called
    diagnosis.origin, diagnosis.origin_code = f"{stem}.py, line {calling}", statement_at(path, calling)
    diagnosis.notes.append(f"line {number} is in {helper}, which passes every check that calls it; line {calling} "
                           f"calls it with what makes the shape go wrong: what the call gives it is where it goes wrong")
    diagnosis.made = []  # what the helper's line uses: the helper is right
    diagnosis.notes += [note for note in dropped_results(path, calling) if note not in diagnosis.notes]


def _passing_helper(diagnosis: Diagnosis, stem: str, first: tuple, runs: list[ProbeRun], folder: Path | None) -> None:
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
        called = _helper_called(path, stem, number, [s[2] for s in steps], passing)
        if called is None:
            continue
        helper, calling = called
        # A call whose result is one the reference computes is right: what follows it differs (a step
        # missing after it), never the call.
        made = [s for s in steps if s[2][0] == f"{stem}.py" and str(s[2][1]) == number and s[2][2] == calling][-1]
        if isinstance(made[1], torch.Tensor) and KnownValues(reference_steps).matching(made[1], exact=True):
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
            _uses_made(diagnosis, stem, f"{stem}.py, line {calling}", statement_at(path, calling),
                       computed_lines([s[2] for s in steps], stem), folder)
    if diagnosis.origin and diagnosis.origin == diagnosis.where:
        diagnosis.origin, diagnosis.origin_code = "", ""


def reduced_instead(shape: tuple, dim: int, kept: bool) -> str:
    """How the reference reduces a value of ``shape``: along ``dim`` (counted from the end) only, said
    as a student writes it (the first dimension as 0, the others from the end), with what it leaves
    (one result per row or column of a matrix), and keepdim only where the reference keeps it."""
    first = dim + len(shape) == 0
    said = 0 if first else dim
    leaves = ("one result per column" if first else "one result per row") if len(shape) == 2 else \
        "one result for each index of the other dimensions"
    return (f"the reference reduces the same values along dimension {said} only (of size {shape[dim]}), {leaves}: "
            f"give that dimension (dim={said}{', keepdim=True' if kept else ''})")


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
    constant = all(abs(c - factors[0]) <= 1e-4 * max(1.0, abs(factors[0])) for c in factors)
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


def _shape_origin(diagnosis: Diagnosis, stem: str, source, run: ProbeRun, error: dict, folder: Path | None) -> None:
    """For an error: the student's step where a shape the reference never makes was made first
    (``run.shapes``, sent with the steps), when it is on another line of this module than the one
    that raised: walking back from what the call that raised received, else the first step whose
    shape the reference's steps of its kind never have; and the lines that make what the line
    that raised uses besides tensors (``self.W_k``, a number), when no such step is found."""
    steps, raised = parse_failure(run.shapes)
    reference_steps = steps_of(source.result(stem, None, run.probe, run.kwargs)) if steps and source is not None else None
    raised_at = diagnosis.where.split(", in ")[0]
    # Raised in another of the student's files (their own masked_softmax.py, which the public check
    # runs): the error leaves this module at the line that called into it, where the hidden grade's
    # reference raises, and where the steps made in that file are noted (trace.student_files).
    leaves_at = raised_at
    if not raised_at.startswith(f"{stem}.py, line ") and run.entered.startswith(f"{stem}.py, line "):
        leaves_at = run.entered.split(", in ")[0]
    computed = computed_lines([where for _, _, where, _ in steps.values()], stem)
    dropped = dropped_dimension(steps, raised)
    theirs = reference_reduction(steps, dropped[0], reference_steps or []) if dropped is not None else None
    if dropped is not None and (theirs is not None or not reduced_otherwise(steps, dropped[0], reference_steps or [])):
        k, dim, kept, other = dropped
        at, code = line_at(steps[k][2], folder, stem)
        line = at.split(", ")[-1] if at else "a line of yours"
        what = steps[k][0].split("[")[0]
        over = "one dimension" if dim is None else f"dimension {dim}"
        if theirs is not None:  # the reference reduces the same value over another dimension: that one is said
            source = tuple(steps[[q for q in steps[k][3] if type(q) is int and q in steps][0]][1])
            diagnosis.notes.append(
                f"{line} ({what} over {over} of a value of shape {source}) gives shape {tuple(steps[k][1])}; the "
                f"reference's {what} of its value of that shape runs over dimension {theirs[0]} and gives shape "
                f"{theirs[1]}, which fits the shape {other} it is combined with")
        else:  # a reduction without keepdim: the shapes fit with it, proven on the shapes
            kept_said = f"it would have shape {kept}, which fits" if dim is not None else \
                "(the dimension kept, of size 1) it fits"
            diagnosis.notes.append(f"{line} ({what} over {over}) gives shape {tuple(steps[k][1])}, without that "
                                   f"dimension; with keepdim=True {kept_said} the shape {other} it is combined with "
                                   f"where the error is raised")
        if at and at != leaves_at:
            diagnosis.origin, diagnosis.origin_code = f"{at} (a step of shape {tuple(steps[k][1])}, which the reference never makes)", code
        return
    # What the layer that raised is given in the reference (``out_proj input``): the shape it should get.
    given = {tuple(s[1].shape) for s in reference_steps or [] for a in raised
             if type(a) is str and a != OUTSIDE and s[0] == f"{a} input"}
    expected = given.pop() if len(given) == 1 else None
    if raised and _joined_wrong(diagnosis, stem, steps, raised, reference_steps or [], expected, folder):
        if diagnosis.origin.split(" (")[0] == leaves_at:
            diagnosis.origin, diagnosis.origin_code = "", ""
        return
    reaching = _ancestors(steps, [p for p in raised if type(p) is int])
    for n, departs in enumerate(_shape_departures(steps, raised, reference_steps or [], _given_shapes(run.kwargs))):
        at, code = line_at(steps[departs][2], folder, stem)
        if n == 0 and raised and at == leaves_at:
            if any(type(p) is int and p in steps for p in steps[departs][3]):
                break  # the walk from what the call received ends on the line that raised: nothing before it is shown
            # It ends at a value made there from no tensor of the student's (a repeat of an input, an
            # arange: sized by numbers, a reference function's steps all told at the calling line): the
            # first step of a shape the reference never makes is shown, if it reaches the call that raised.
            continue
        if n > 0 and departs not in reaching:
            continue
        if at and at != leaves_at:
            shape = tuple(steps[departs][1])
            diagnosis.origin, diagnosis.origin_code = f"{at} (a step of shape {shape}, which the reference never makes)", code
            _uses_made(diagnosis, stem, at, code, computed, folder, layers=[])  # the numbers it sizes things by
            _sized_by_one_number(diagnosis, steps[departs], at, shape)
            _rows_before_reordering(diagnosis, stem, steps, departs, reference_steps or [], at, folder)
            return
    # What the line that raised uses besides tensors (a number, an attribute such as self.head_dim);
    # a layer it calls (self.W_k) only when that layer's own tensors went into the call that raised,
    # when no torch call raised and it is the one layer the line calls (nn.GRU checks its input
    # itself), or when no steps were recorded at all (in __init__).
    if diagnosis.code and raised_at.startswith(f"{stem}.py, line "):
        layers = [p for p in raised if type(p) is str and p != OUTSIDE] if steps else None
        if steps and not raised and len(called_on(diagnosis.code)) == 1:
            layers = list(called_on(diagnosis.code))  # no torch call raised: the one layer the line calls did
        _uses_made(diagnosis, stem, raised_at, diagnosis.code, computed, folder, layers=layers, same_method=True)


def _entered_from(diagnosis: Diagnosis, stem: str, entered: str, folder: Path | None) -> None:
    """An error raised in another of the student's files (their own masked_softmax.py): the line of
    this module that called into it, unless a line of this module is shown already."""
    if diagnosis.origin or diagnosis.where.startswith(f"{stem}.py") or not entered.startswith(f"{stem}.py, line "):
        return
    number = entered.split(", line ")[1].split(",")[0]
    if number.isdigit() and folder is not None:
        diagnosis.origin, diagnosis.origin_kind = f"{stem}.py, line {number}", "call"
        diagnosis.origin_code = statement_at(Path(folder) / f"{stem}.py", int(number))


def _called_from(diagnosis: Diagnosis, stem: str, called: str, folder: Path | None) -> None:
    """An error raised in a function of this module that another of its lines called (a class built
    by the factory the check called, with an argument it refuses): that calling line, the outermost
    of the module's own, unless a line of where the shape went wrong is shown already."""
    if diagnosis.origin or folder is None or not called.startswith(f"{stem}.py, line "):
        return
    number = called.split(", line ")[1].split(",")[0]
    if number.isdigit() and not diagnosis.where.startswith(f"{stem}.py, line {number},"):
        diagnosis.origin, diagnosis.origin_kind = f"{stem}.py, line {number}", "call"
        diagnosis.origin_code = statement_at(Path(folder) / f"{stem}.py", int(number))


def dropped_dimension(steps: dict, raised: list) -> tuple | None:
    """Of what the call that raised received (``raised``, indices of ``steps``), a reduction step that
    dropped one dimension of what it reduced (``sum(dim=-1)`` without keepdim), such that with that
    dimension kept (size 1) every operand broadcasts, where as they are they do not: ``(step, the
    dimension, the shape it would have, the other operands' shape)``; else None."""
    received = [p for p in raised if type(p) is int and p in steps]
    if len(received) < 2:
        return None
    shapes = {p: tuple(steps[p][1]) for p in received}
    if broadcast(*shapes.values()):
        return None  # they broadcast as they are: the error is another one
    for p in received:
        label, shape, _, parents = steps[p]
        sources = [q for q in parents if type(q) is int and q in steps]
        if label.split("[")[0] not in REDUCTIONS or len(sources) != 1:
            continue
        source = tuple(steps[sources[0]][1])
        dims = [d for d in range(len(source)) if source[:d] + source[d + 1:] == tuple(shape)]
        others = [s for q, s in shapes.items() if q != p]
        fits = []
        for d in dims:
            kept = source[:d] + (1,) + source[d + 1:]
            if broadcast(kept, *others):
                fits.append((d - len(source), kept))
        # Which dimension it dropped is said only when the shapes tell (two of the same size do not).
        if fits and len(fits) == len(dims):
            dim, kept = fits[0] if len(fits) == 1 else (None, None)
            return p, dim, kept, others[0] if len(others) == 1 else tuple(others)
    return None


def _reductions_of_the_same(steps: dict, k: int, reference_steps: list) -> tuple[tuple, list[tuple]]:
    """The shape of what the student's reduction ``steps[k]`` reduced, and the result shapes of the
    reference's reductions of the same kind of a value of that very shape."""
    sources = [q for q in steps[k][3] if type(q) is int and q in steps]
    source = tuple(steps[sources[0]][1]) if len(sources) == 1 else ()
    kind = steps[k][0].split("[")[0]
    shapes = []
    for step in reference_steps:
        parents = [q for q in (step[3] if len(step) > 3 else []) if type(q) is int and 0 <= q < len(reference_steps)]
        if (step[0].split("[")[0] == kind and len(parents) == 1 and isinstance(step[1], torch.Tensor)
                and tuple(reference_steps[parents[0]][1].shape) == source):
            shapes.append(tuple(step[1].shape))
    return source, shapes


def reference_reduction(steps: dict, k: int, reference_steps: list) -> tuple[int, tuple] | None:
    """``(dimension, shape)`` when the reference reduces a value of the shape the student's reduction
    ``steps[k]`` reduced, by the same operation, always over one other dimension it can be told by
    (dropping it, without keepdim): then keepdim is not the fix, the dimension is."""
    source, shapes = _reductions_of_the_same(steps, k, reference_steps)
    mine = tuple(steps[k][1])
    if not shapes or len(set(shapes)) != 1 or shapes[0] == mine or len(shapes[0]) != len(source) - 1:
        return None
    dims = [d for d in range(len(source)) if source[:d] + source[d + 1:] == shapes[0]]
    return (dims[0], shapes[0]) if len(dims) == 1 else None


def reduced_otherwise(steps: dict, k: int, reference_steps: list) -> bool:
    """Whether the reference reduces a value of the shape the student's reduction ``steps[k]`` reduced,
    by the same operation, without keeping the dimension (so "keepdim=True" is not what it does)."""
    source, shapes = _reductions_of_the_same(steps, k, reference_steps)
    return bool(shapes) and all(len(s) != len(source) for s in shapes)


def broadcast(*shapes: tuple) -> bool:
    """Whether ``shapes`` broadcast together (torch's rule: aligned from the right, each size equal or 1).
    ``torch.broadcast_shapes`` says the same, but its error costs some 20 ms."""
    return all(len(set(sizes) - {1}) <= 1 for sizes in itertools.zip_longest(*(s[::-1] for s in shapes), fillvalue=1))


# Steps that make a tensor from numbers alone (their sizes and values are the numbers they are given).
MADE_FROM_NUMBERS = frozenset({"arange", "ones", "zeros", "full", "empty", "eye", "linspace", "rand", "randn", "randint"})


def _sized_by_one_number(diagnosis: Diagnosis, step: list, at: str, shape: tuple) -> None:
    """A step of a wrong shape made from numbers alone (``torch.arange(maxlen)``), on a
    line that uses one number made on a line of its own (``maxlen = X.size(-1)``): that line is where
    the wrong shape starts, and it is shown so (the line of the step, which is right, as context)."""
    if step[0].split("[")[0] not in MADE_FROM_NUMBERS or any(type(p) is int for p in step[3]) or len(diagnosis.made) != 1:
        return
    name, _, rest = diagnosis.made[0].partition(": line ")
    number, _, code = rest.partition(": ")
    if name.startswith("self.") or not number.isdigit():
        return
    diagnosis.origin = (f"{at.rsplit(', line ', 1)[0]}, line {number} (the number {name}, which sizes the step of "
                        f"shape {shape} at line {at.rsplit(', line ', 1)[-1]} that the reference never makes)")
    diagnosis.origin_code, diagnosis.made = code, []


REORDERINGS = {"permute": "permutes", "transpose": "transposes", "swapaxes": "swaps two dimensions of",
               "swapdims": "swaps two dimensions of", "movedim": "moves a dimension of", "t": "transposes",
               "mT": "transposes", "T": "transposes"}  # what the reference does, said in a sentence


def _rows_before_reordering(diagnosis: Diagnosis, stem: str, steps: dict, k: int, reference_steps: list, at: str,
                            folder: Path | None) -> None:
    """Rows of a loop over a tensor (``for x in X``) of a shape the reference never makes, taken along
    dimension 0 of a value whose shape and kind the reference makes too and then reorders (a permute,
    a transpose) into another order: said, with both orders and the line that made the value (the
    dimension order is what differs, proven on the shapes; not which line should change it)."""
    label, rows, _, parents = steps[k]
    tensors = [p for p in parents if type(p) is int and p in steps]
    if label.split("[")[0] != "unbind" or len(tensors) != 1:
        return
    kind, shape = steps[tensors[0]][0], tuple(steps[tensors[0]][1])
    if len(shape) < 2 or tuple(rows) != shape[1:]:
        return
    for step in reference_steps:
        theirs = tuple(step[1].shape)
        if operation_of(step[0]) not in REORDERINGS or sorted(theirs) != sorted(shape) or theirs == shape:
            continue
        if any(type(q) is int and 0 <= q < len(reference_steps) and reference_steps[q][0] == kind
               and tuple(reference_steps[q][1].shape) == shape for q in step[3]):
            made, _ = line_at(steps[tensors[0]][2], folder, stem)
            made = f", made at {made.split(', ')[-1]}" if made and made != at else ""
            diagnosis.notes.append(
                f"{at.split(', ')[-1]} takes the rows of a value of shape {shape} ({kind}{made}) along dimension 0, "
                f"each of shape {tuple(rows)}; the reference's {kind} has that shape too, and the reference "
                f"{REORDERINGS[operation_of(step[0])]} it into shape {theirs}, whose rows have shape {theirs[1:]}")
            return


def _ancestors(steps: dict, start: list[int]) -> set[int]:
    """The steps ``start`` are computed from, and those they are computed from, and so on (``start`` too)."""
    seen, frontier = set(), list(start)
    while frontier:
        i = frontier.pop()
        if i in seen or i not in steps:
            continue
        seen.add(i)
        frontier.extend(p for p in steps[i][3] if type(p) is int)
    return seen


def _shape_departures(steps: dict, raised: list, reference_steps: list, given: tuple = ()) -> list[int]:
    """Candidates for where a wrong shape was made, best first: the walk back from what the call
    that raised received, then the first step whose shape the reference's steps of its kind never have.
    ``given``: the shapes of the tensors the probe gave (a part of one is taken from no step)."""
    if not steps or not reference_steps:
        return []
    found = []
    if raised and (walked := shape_origin(steps, raised, reference_steps, given)) is not None:
        found.append(walked)
    if (first := first_unknown_shape(steps, reference_steps, given)) is not None:
        found.append(first)
    return found


def _given_shapes(kwargs) -> tuple:
    """The shapes of the tensors among a probe's arguments."""
    return tuple(tuple(t.shape) for t in _given_tensors(kwargs))


def _given_tensors(kwargs) -> tuple:
    """The tensors among a probe's arguments (in lists and dicts too)."""
    found, todo = [], [kwargs]
    while todo and len(found) < 64:
        value = todo.pop()
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, dict):
            todo.extend(value.values())
        elif isinstance(value, (list, tuple)):
            todo.extend(value)
    return tuple(found)


def parse_failure(text) -> tuple[dict, list]:
    """The steps sent with an error (see ``probing.shapes_text``) as ``{index: [label, shape,
    [file, line], parents]}``, and what the call that raised received (step indices); ({}, []) for
    anything else."""
    if not isinstance(text, str):
        return {}, []
    found, raised = {}, []
    try:
        for token in text.split()[:400]:
            if token.startswith("!<"):
                raised = [int(n) if n.isdigit() else n for n in token[2:].split(",")
                          if n.isdigit() or (n.isidentifier() and len(n) <= 40)][:16]
                continue
            index, _, token = token.partition(":")
            token, _, parents = token.partition("<")
            label, _, rest = token.partition("|")
            shape, _, where = rest.partition("@")
            name, _, line = where.rpartition(":")
            dims = [] if shape == "s" else [int(n) for n in shape.split("x")]
            found[int(index)] = [label.replace("~", " "), dims, _where_of([name, *map(int, line.split("/"))]),
                                 [int(n) for n in parents.split(",") if n][:16]]
    except ValueError:
        return {}, []
    return found, raised


def floating(steps: list) -> list:
    """The floating-point steps (the named stages are among them; masks and lengths are not)."""
    return [step for step in steps if step[1].is_floating_point()]


def _value_origin(diagnosis: Diagnosis, stem: str, found, steps: list, start: int | None, reference_steps: list,
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
        holding = [i for i, s in enumerate(steps) if s[1].is_floating_point()
                   and tuple(s[1].shape) == tuple(output.shape) and catalog.same_tensor(s[1], output)]
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
    at, code = line_at(steps[origin.step][2], folder, stem)
    if transposed and at:
        diagnosis.notes.append(f"{at.split(', ')[-1]} transposes ({transposed}) a value the reference computes; the "
                               f"reference never computes it transposed")
    own = [p for p in steps[origin.step][3] if type(p) is str and p != OUTSIDE] if len(steps[origin.step]) > 3 else []
    if not at and (not own or steps[origin.step][2][0] in sound):  # made in a helper module of theirs from what
        # this module's call passed it alone (not from the helper's own weights, which its construction may have sized
        # otherwise, unless that module passed every check of its own): that call's line
        called = _called_into(steps[origin.step], stem, sound)
        at, code = line_at(called or steps[_entered_at(steps, origin.step, stem)][2], folder, stem)
    if not at:
        return
    for j in discarded(steps, origin.step, reference_steps, output):  # a result computed and dropped on the way
        dropped_at, dropped_code = line_at(steps[j][2], folder, stem)
        if dropped_at and dropped_at != at:
            shown = dropped_code.strip().replace("( ", "(").replace(" )", ")")
            note = (f"{dropped_at.split(', ')[-1]} ({shown}) computes a value and nothing of yours uses "
                    f"its result: it is computed and never used, while the reference goes on with that value; "
                    f"{at.split(', ')[-1]} reads what it was computed from, unchanged")
            if note not in diagnosis.notes:
                diagnosis.notes.append(note)
            break
    if origin.same_inputs and (twice := applied_twice(steps, origin.step, reference_steps)) is not None:
        made, made_code = line_at(steps[twice][2], folder, stem)
        operation = operation_of(steps[origin.step][0])
        verb, noun = TWICE.get(operation, (f"applies {operation} to", operation))
        made_by = f" (made at {made.split(', ')[-1]}: {made_code.strip()})" if made and made != at and made_code else ""
        diagnosis.notes.append(f"{at.split(', ')[-1]} {verb} a value that already equals what the reference has after "
                               f"its own {noun}{made_by}: your code applies the {noun} twice, the reference once")
    if at != diagnosis.where:
        diagnosis.origin, diagnosis.origin_code = at, code
        # Inputs that are the reference's own tensors are said so ("value"), not where one is its mask inverted
        # (said in a note) or a tensor of the module's that is not compared ("uses").
        diagnosis.origin_kind = ("uses" if origin.same_inputs and (origin.attributes or origin.inverted) else
                                 "value" if origin.same_inputs else "combination" if origin.inputs_known else "inputs")
    for i in origin.inverted:  # a mask of the entries kept: said, beside the line that uses it
        made, made_code = line_at(steps[i][2], folder, stem)
        if made:
            diagnosis.notes.append(f"{made.split(', ')[-1]} ({made_code.strip()}) gives the reference's mask inverted: "
                                   f"True exactly where the reference's mask is False")
    if steps[origin.step][0] in ("reshape", "view") and (moved := reordered(steps[origin.step][1], reference_steps)):
        shape, order = moved
        diagnosis.notes.append(
            f"{at.split(', ')[-1]} gives shape {tuple(steps[origin.step][1].shape)} with the entries in the order they "
            f"have in shape {shape} ({steps[origin.step][0]} never moves an entry to another dimension); the reference's "
            f"tensor of shape {tuple(steps[origin.step][1].shape)} is the one of shape {shape} with its dimensions "
            f"reordered: .permute{order}")
    if whole_reduction(steps, origin.step):
        parent = next(p for p in steps[origin.step][3] if type(p) is int)
        ways = reduced_along(reference_steps, steps[origin.step][0], steps[parent][1])
        if len(ways) == 1:
            diagnosis.notes.append(f"{at.split(', ')[-1]} reduces a whole tensor of shape "
                                   f"{tuple(steps[parent][1].shape)} to one number ({steps[origin.step][0]} over every "
                                   f"entry); " + reduced_instead(tuple(steps[parent][1].shape), *ways[0]))
    if origin.same_inputs:
        _uses_made(diagnosis, stem, at, code, computed_lines([step[2] for step in steps], stem), folder)
        return
    if not diagnosis.origin and origin.inputs_known:  # the line shown combines values the reference has: said so
        diagnosis.origin_kind = "combination"
    # The reference's values, looked up for products with a parameter (x @ W_key) among the inputs.
    known = KnownValues(reference_steps) if any(steps[i][0].startswith("x @ ") for i in origin.inputs) else None
    for i in origin.inputs:
        made, made_code = line_at(steps[i][2], folder, stem)
        line = f"{made.split(', ')[-1]}: {made_code}"
        if made and made != at and made_code and line not in diagnosis.inputs:
            diagnosis.inputs.append(line)
            _parameter_holds_another(diagnosis, steps[i], reference_steps, known, made, made_code)
        # A value made from the module's own tensors alone (self.mask sliced), which the reference never
        # has: what the module keeps is where it differs; the lines that make that attribute are shown.
        own = [p for p in steps[i][3] if type(p) is str and p != OUTSIDE]
        if own and len(own) == len(steps[i][3]) and made and made_code and not diagnosis.made:
            _uses_made(diagnosis, stem, made, made_code, computed_lines([step[2] for step in steps], stem), folder)
            diagnosis.made = [line for line in diagnosis.made if line.split(":")[0].removeprefix("self.") in own]
    diagnosis.inputs = diagnosis.inputs[:MAX_LINES]


def _parameter_holds_another(diagnosis: Diagnosis, step: list, reference_steps: list, known: KnownValues | None,
                             at: str, code: str) -> None:
    """A product with one of the module's parameters (``x @ W_key``) whose value is the reference's
    product with another of them (``x @ W_value``), on the same inputs and seed: said, with both names
    (the parameter holds the other's values: made in another order, or given the other's). ``known``:
    the reference's values (:class:`KnownValues` of ``reference_steps``)."""
    mine = step[0]
    if known is None or not mine.startswith("x @ ") or not isinstance(step[1], torch.Tensor):
        return
    theirs = {reference_steps[r][0] for r in known.matching(step[1], exact=True) if r >= 0}
    others = sorted(label for label in theirs if label.startswith("x @ ") and label != mine)
    if others and mine not in theirs:
        note = (f"{at.split(', ')[-1]} ({code.strip()}) gives what the reference's {others[0]} gives, on the same "
                f"inputs and seed: your {mine[4:]} holds the values the reference's {others[0][4:]} holds")
        if note not in diagnosis.notes:
            diagnosis.notes.append(note)


# How a repeated operation is said (applied_twice): the verb on the line, the noun of the operation.
TWICE = {"div": ("divides", "division"), "mul": ("multiplies", "multiplication")}


def _for_its_shape_only(steps: list, i: int) -> bool:
    """Whether every step computed from ``steps[i]`` reads only its shape (``torch.zeros_like``): a
    value made to size a tensor to write into, never itself a wrong value or a wrong shape to show."""
    users = [s for s in steps if i in (s[3] if len(s) > 3 else ())]
    return bool(users) and all(s[0].split("[")[0] in FOR_SHAPE for s in users)


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


def _through_transposes(origin, steps: list, reference_steps: list, folder: Path | None, stem: str):
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
        value = steps[p][1]
        if value.dim() < 2 or value.numel() <= 1:
            return False
        flips = [value.mT] + ([value.permute(*reversed(range(value.dim())))] if value.dim() > 2 else [])
        return all(not (tuple(t.shape) == tuple(value.shape) and catalog.same_tensor(t, value))
                   and not values.matching(t, exact=True) for t in flips)

    step = steps[origin.step]
    parents = sorted({p for p in (step[3] if len(step) > 3 else ()) if type(p) is int and 0 <= p < origin.step})
    for p in parents:
        where = steps[p][2]
        attribute = transposed_at(path, where[1])[0] if where[0] == f"{stem}.py" and where[1] else ""
        if attribute and where[1] != step[2][1] and flipped_unknown(p):
            return Origin(p, False, [], inputs_known=False), f".{attribute}"
    if (step[2][0] == f"{stem}.py" and step[2][1] and transposed_at(path, step[2][1])[1]
            and any(flipped_unknown(p) for p in parents)):
        return Origin(origin.step, False, [], inputs_known=False), ""
    return origin, ""


def _entered_at(steps: list, i: int, stem: str) -> int:
    """The first step after ``i`` made at a line of ``stem``.py and computed from step ``i`` (through
    steps of other files): the line of the diagnosed module whose call into a helper module of the
    student's (their own ``scoring.py``) made what step ``i`` made there; ``i`` when there is none."""
    inside = {i}
    for k in range(i + 1, len(steps)):
        parents = {p for p in (steps[k][3] if len(steps[k]) > 3 else ()) if type(p) is int}
        if not parents & inside:
            continue
        if steps[k][2][0] == f"{stem}.py":
            return k
        inside.add(k)
    return i


def _output_is_a_stage(diagnosis: Diagnosis, stem: str, found, step: list | None, reference_steps: list, output,
                       folder: Path | None) -> None:
    """When the student's output is the reference's value of another named step (the weights
    returned instead of the context vectors), say which, and where the student computed it."""
    if not isinstance(output, torch.Tensor) or found.stage != OUTPUT and found.actual is not None:
        return
    for stage in stages(floating(reference_steps), None):
        if tuple(stage.value.shape) == tuple(output.shape) and catalog.same_tensor(stage.value, output):
            diagnosis.relation = f"your output is the reference's {stage.name}"
            if not diagnosis.where and step is not None:
                diagnosis.where, diagnosis.code = line_at(step[2], folder, stem)
            return


def computed_lines(wheres: list, stem: str) -> set[int]:
    """The lines of ``stem``.py where a recorded step was computed, or that called the function
    computing it (a step's ``[file, line, calling line]``)."""
    return {n for where in wheres if where[0] == f"{stem}.py" for n in where[1:3] if n}


def _uses_made(diagnosis: Diagnosis, stem: str, at: str, code: str, computed: set[int], folder: Path | None,
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


def _number_line(diagnosis: Diagnosis, stem: str, source, runs: list[ProbeRun], folder: Path | None) -> None:
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
            hit = next((n for n in mine if wrong is not None and _same_number(n[1], wrong)), None)
            if hit is not None:
                ours = numbers_with_lines(source.result(stem, None, run.probe, run.kwargs))
                named = {n[0]: [m[1] for m in ours if m[0] == n[0]] for n in ours}
                if _where_numbers_part(mine, ours, named, hit) != (hit, None):
                    return  # the numbers part from the reference's before it: that line is not proven
                diagnosis.where, diagnosis.code = line_at(hit[2], folder, stem)
                if diagnosis.where:
                    _uses_made(diagnosis, stem, diagnosis.where, diagnosis.code, set(), folder)  # precision = ...
                    diagnosis.notes.append(f"line {hit[2][1]} assigns {hit[0]} the first number that this mistake "
                                           f"computes and the reference never does (on the first check that fails)")
                    return


def _first_unknown_number(diagnosis: Diagnosis, stem: str, source, runs: list[ProbeRun], folder: Path | None) -> None:
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
        named = {name: [n[1] for n in theirs if n[0] == name] for name in {n[0] for n in theirs}}

        hit = next((n for n in mine if _unknown_number(n, mine, named, reference)), None)
        if hit is None:
            return
        hit, expected = _where_numbers_part(mine, theirs, named, hit)
        if hit is None:
            return
        at, code = line_at(hit[2], folder, stem)
        if at:
            diagnosis.where, diagnosis.code = at, code
            value = int(hit[1]) if float(hit[1]).is_integer() else round(hit[1], 4)
            if expected is None:
                diagnosis.notes.append(f"line {hit[2][1]} assigns {hit[0]} = {value}, the first number of yours that "
                                       f"the reference never computes on the same input (the first check that fails); "
                                       f"every number your code assigns before it, the reference computes too")
            else:
                wanted = int(expected) if float(expected).is_integer() else round(expected, 4)
                diagnosis.notes.append(f"line {hit[2][1]} assigns {hit[0]} = {value} where the reference, at the same "
                                       f"point on the same input (the first check that fails), has {hit[0]} = {wanted}; "
                                       f"every number your code assigns before it is the reference's, in the same order")
        return


def _where_numbers_part(mine: list, theirs: list, named: dict, hit: list) -> tuple[list | None, float | None]:
    """A line is shown only when what it reads is the reference's: every number of a name both assign,
    up to it, is the reference's, in the same order. Where the two first part before ``hit`` (the
    student's number to show), the number where they part is shown instead if its statement assigns
    the same name another number (what it reads agrees, its own result differs), with the reference's
    number there; if they part by taking another path (a loop that runs once less), no line is proven
    and none is shown: ``(None, None)``. Else ``(hit, None)``."""
    shared = {n[0] for n in mine} & set(named)
    ours = [n for n in mine if n[0] in shared]
    refs = [n for n in theirs if n[0] in shared]
    part = next((k for k, (a, b) in enumerate(zip(ours, refs)) if a[0] != b[0] or not _same_number(a[1], b[1])), None)
    if part is None or mine.index(ours[part]) > mine.index(hit):
        return hit, None
    # The same statement on both sides: the lines paired by the numbers that agree before it.
    paired = {}
    for a, b in zip(ours[:part], refs[:part]):
        paired.setdefault(("mine", a[2][1]), b[2][1])
        paired.setdefault(("theirs", b[2][1]), a[2][1])
    a, b = ours[part], refs[part]
    same_statement = (paired.get(("mine", a[2][1]), b[2][1]) == b[2][1]
                      and paired.get(("theirs", b[2][1]), a[2][1]) == a[2][1])
    if a[0] != b[0] or not same_statement:  # another path (a loop run another number of times)
        return None, None
    return (hit, None) if a is hit else (a, b[1])


def _unknown_number(n: list, mine: list, named: dict, reference: list) -> bool:
    """Whether the student's number ``n`` (``[name, value, where]``) is one the reference never computes:
    against its one value where both assign that name once, against that name's values where the
    reference assigns it, else against all of the reference's numbers."""
    values = named.get(n[0])
    if values and len(values) == 1 and sum(1 for m in mine if m[0] == n[0]) == 1:
        return not _same_number(n[1], values[0])
    return not any(_same_number(n[1], r) for r in (values or reference))


def _same_number(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def numbers_with_lines(value) -> list[list]:
    """The Python numbers a traced probe's value carries, as ``[name, value, [file, line, 0]]`` (checked:
    the sandbox sent them), else []."""
    found = value.get("numbers") if isinstance(value, dict) and "$traced" in value else None
    if not isinstance(found, list):
        return []
    return [[n[0], float(n[1]), _where_of(n[2])] for n in found[:400]
            if isinstance(n, list) and len(n) == 3 and isinstance(n[0], str) and n[0].isidentifier()
            and type(n[1]) in (int, float)]


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
