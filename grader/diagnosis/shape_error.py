"""For an error raised by a wrong shape: where that shape was made first, said to the student.

From the shapes of the student's steps sent with the error (:func:`grader.sandbox.protocol.parse_shapes`):
a reduction that dropped a dimension (:mod:`grader.diagnosis.reductions`), a wrong join, the first step
of a shape the reference never makes (:mod:`grader.diagnosis.wrong_shapes`), the number that sizes it,
rows taken before a reordering; else the lines that make what the line that raised uses. For an error
raised in another file or function of theirs: the line of this module that called it.
"""

from __future__ import annotations

from pathlib import Path

from grader.diagnosis.mechanism import enclosing_loop
from grader.diagnosis.origin import operation_of
from grader.diagnosis.reductions import dropped_dimension, reduced_otherwise, reference_reduction
from grader.diagnosis.sent import ProbeRun, given_shapes, steps_of
from grader.diagnosis.source_text import called_on, statement_at
from grader.diagnosis.student_lines import computed_lines, line_at, uses_made
from grader.diagnosis.wrong_shapes import first_unknown_shape, shape_origin, wrong_join
from grader.model import Diagnosis
from grader.sandbox.protocol import ShapeStep, Step, parse_shapes
from grader.sandbox.trace import OUTSIDE


def show_shape_origin(diagnosis: Diagnosis, stem: str, source, run: ProbeRun, folder: Path | None) -> None:
    """For an error: the student's step where a shape the reference never makes was made first
    (``run.shapes``, sent with the steps), when it is on another line of this module than the one
    that raised: walking back from what the call that raised received, else the first step whose
    shape the reference's steps of its kind never have; and the lines that make what the line
    that raised uses besides tensors (``self.W_k``, a number), when no such step is found."""
    steps, raised = parse_shapes(run.shapes)
    reference_steps = steps_of(source.result(stem, None, run.probe, run.kwargs)) if steps and source is not None else None
    raised_at = diagnosis.where.split(", in ")[0]
    # Raised in another of the student's files (their own masked_softmax.py, which the public check
    # runs): the error leaves this module at the line that called into it, where the hidden grade's
    # reference raises, and where the steps made in that file are noted (trace.student_files).
    leaves_at = raised_at
    if not raised_at.startswith(f"{stem}.py, line ") and run.entered.startswith(f"{stem}.py, line "):
        leaves_at = run.entered.split(", in ")[0]
    computed = computed_lines([step.where for step in steps.values()], stem)
    dropped = dropped_dimension(steps, raised)
    theirs = reference_reduction(steps, dropped[0], reference_steps or []) if dropped is not None else None
    if dropped is not None and (theirs is not None or not reduced_otherwise(steps, dropped[0], reference_steps or [])):
        _reduction_dropped(diagnosis, stem, steps, dropped, theirs, leaves_at, folder)
        return
    # What the layer that raised is given in the reference (``out_proj input``): the shape it should get.
    given = {tuple(s.value.shape) for s in reference_steps or [] for a in raised
             if type(a) is str and a != OUTSIDE and s.label == f"{a} input"}
    expected = given.pop() if len(given) == 1 else None
    if raised and joined_wrong(diagnosis, stem, steps, raised, reference_steps or [], expected, folder):
        if diagnosis.origin.split(" (")[0] == leaves_at:
            diagnosis.origin, diagnosis.origin_code = "", ""
        return
    if _departure_shown(diagnosis, stem, steps, raised, reference_steps or [], run, leaves_at, computed, folder):
        return
    # What the line that raised uses besides tensors (a number, an attribute such as self.head_dim);
    # a layer it calls (self.W_k) only when that layer's own tensors went into the call that raised,
    # when no torch call raised and it is the one layer the line calls (nn.GRU checks its input
    # itself), or when no steps were recorded at all (in __init__).
    if diagnosis.code and raised_at.startswith(f"{stem}.py, line "):
        layers = [p for p in raised if type(p) is str and p != OUTSIDE] if steps else None
        if steps and not raised and len(called_on(diagnosis.code)) == 1:
            layers = list(called_on(diagnosis.code))  # no torch call raised: the one layer the line calls did
        uses_made(diagnosis, stem, raised_at, diagnosis.code, computed, folder, layers=layers, same_method=True)


def _reduction_dropped(diagnosis: Diagnosis, stem: str, steps: dict[int, ShapeStep], dropped: tuple, theirs: tuple | None,
                       leaves_at: str, folder: Path | None) -> None:
    """A reduction of what the call that raised received that dropped a dimension
    (:func:`grader.diagnosis.reductions.dropped_dimension`): said, with the dimension the reference
    reduces over (``theirs``) where it reduces the same value otherwise, else with keepdim; its line
    is where the shape went wrong, unless it is where the error leaves this module (``leaves_at``)."""
    k, dim, kept, other = dropped
    at, code = line_at(steps[k].where, folder, stem)
    line = at.split(", ")[-1] if at else "a line of yours"
    what = steps[k].label.split("[")[0]
    over = "one dimension" if dim is None else f"dimension {dim}"
    if theirs is not None:  # the reference reduces the same value over another dimension: that one is said
        source = tuple(steps[[q for q in steps[k].parents if type(q) is int and q in steps][0]].shape)
        diagnosis.notes.append(
            f"{line} ({what} over {over} of a value of shape {source}) gives shape {tuple(steps[k].shape)}; the "
            f"reference's {what} of its value of that shape runs over dimension {theirs[0]} and gives shape "
            f"{theirs[1]}, which fits the shape {other} it is combined with")
    else:  # a reduction without keepdim: the shapes fit with it, proven on the shapes
        kept_said = f"it would have shape {kept}, which fits" if dim is not None else \
            "(the dimension kept, of size 1) it fits"
        diagnosis.notes.append(f"{line} ({what} over {over}) gives shape {tuple(steps[k].shape)}, without that "
                               f"dimension; with keepdim=True {kept_said} the shape {other} it is combined with "
                               f"where the error is raised")
    if at and at != leaves_at:
        diagnosis.origin, diagnosis.origin_code = f"{at} (a step of shape {tuple(steps[k].shape)}, which the reference never makes)", code


def _departure_shown(diagnosis: Diagnosis, stem: str, steps: dict[int, ShapeStep], raised: list, reference_steps: list[Step],
                     run: ProbeRun, leaves_at: str, computed: set[int], folder: Path | None) -> bool:
    """The first step of a shape the reference never makes (:func:`_shape_departures`), shown where
    it is on another line than the one the error leaves this module at, with the lines and numbers
    that size it; True when shown."""
    reaching = _ancestors(steps, [p for p in raised if type(p) is int])
    for n, departs in enumerate(_shape_departures(steps, raised, reference_steps, given_shapes(run.kwargs))):
        at, code = line_at(steps[departs].where, folder, stem)
        if n == 0 and raised and at == leaves_at:
            if any(type(p) is int and p in steps for p in steps[departs].parents):
                return False  # the walk from what the call received ends on the line that raised: nothing before it is shown
            # It ends at a value made there from no tensor of the student's (a repeat of an input, an
            # arange: sized by numbers, a reference function's steps all told at the calling line): the
            # first step of a shape the reference never makes is shown, if it reaches the call that raised.
            continue
        if n > 0 and departs not in reaching:
            continue
        if at and at != leaves_at:
            shape = tuple(steps[departs].shape)
            diagnosis.origin, diagnosis.origin_code = f"{at} (a step of shape {shape}, which the reference never makes)", code
            uses_made(diagnosis, stem, at, code, computed, folder, layers=[])  # the numbers it sizes things by
            _sized_by_one_number(diagnosis, steps[departs], at, shape)
            _rows_before_reordering(diagnosis, stem, steps, departs, reference_steps, at, folder)
            return True
    return False


def entered_from(diagnosis: Diagnosis, stem: str, entered: str, folder: Path | None) -> None:
    """An error raised in another of the student's files (their own masked_softmax.py): the line of
    this module that called into it, unless a line of this module is shown already."""
    if diagnosis.origin or diagnosis.where.startswith(f"{stem}.py") or not entered.startswith(f"{stem}.py, line "):
        return
    number = entered.split(", line ")[1].split(",")[0]
    if number.isdigit() and folder is not None:
        diagnosis.origin, diagnosis.origin_kind = f"{stem}.py, line {number}", "call"
        diagnosis.origin_code = statement_at(Path(folder) / f"{stem}.py", int(number))


def called_from(diagnosis: Diagnosis, stem: str, called: str, folder: Path | None) -> None:
    """An error raised in a function of this module that another of its lines called (a class built
    by the factory the check called, with an argument it refuses): that calling line, the outermost
    of the module's own, unless a line of where the shape went wrong is shown already."""
    if diagnosis.origin or folder is None or not called.startswith(f"{stem}.py, line "):
        return
    number = called.split(", line ")[1].split(",")[0]
    if number.isdigit() and not diagnosis.where.startswith(f"{stem}.py, line {number},"):
        diagnosis.origin, diagnosis.origin_kind = f"{stem}.py, line {number}", "call"
        diagnosis.origin_code = statement_at(Path(folder) / f"{stem}.py", int(number))


# Steps that make a tensor from numbers alone (their sizes and values are the numbers they are given).
MADE_FROM_NUMBERS = frozenset({"arange", "ones", "zeros", "full", "empty", "eye", "linspace", "rand", "randn", "randint"})


def _sized_by_one_number(diagnosis: Diagnosis, step: ShapeStep, at: str, shape: tuple) -> None:
    """A step of a wrong shape made from numbers alone (``torch.arange(maxlen)``), on a
    line that uses one number made on a line of its own (``maxlen = X.size(-1)``): that line is where
    the wrong shape starts, and it is shown so (the line of the step, which is right, as context)."""
    if step.label.split("[")[0] not in MADE_FROM_NUMBERS or any(type(p) is int for p in step.parents) or len(diagnosis.made) != 1:
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


def _rows_before_reordering(diagnosis: Diagnosis, stem: str, steps: dict[int, ShapeStep], k: int, reference_steps: list[Step],
                            at: str, folder: Path | None) -> None:
    """Rows of a loop over a tensor (``for x in X``) of a shape the reference never makes, taken along
    dimension 0 of a value whose shape and kind the reference makes too and then reorders (a permute,
    a transpose) into another order: said, with both orders and the line that made the value (the
    dimension order is what differs, proven on the shapes; not which line should change it)."""
    label, rows, _, parents = steps[k]
    tensors = [p for p in parents if type(p) is int and p in steps]
    if label.split("[")[0] != "unbind" or len(tensors) != 1:
        return
    kind, shape = steps[tensors[0]].label, tuple(steps[tensors[0]].shape)
    if len(shape) < 2 or tuple(rows) != shape[1:]:
        return
    for step in reference_steps:
        theirs = tuple(step.value.shape)
        if operation_of(step.label) not in REORDERINGS or sorted(theirs) != sorted(shape) or theirs == shape:
            continue
        if any(type(q) is int and 0 <= q < len(reference_steps) and reference_steps[q].label == kind
               and tuple(reference_steps[q].value.shape) == shape for q in step.parents):
            made, _ = line_at(steps[tensors[0]].where, folder, stem)
            made = f", made at {made.split(', ')[-1]}" if made and made != at else ""
            diagnosis.notes.append(
                f"{at.split(', ')[-1]} takes the rows of a value of shape {shape} ({kind}{made}) along dimension 0, "
                f"each of shape {tuple(rows)}; the reference's {kind} has that shape too, and the reference "
                f"{REORDERINGS[operation_of(step.label)]} it into shape {theirs}, whose rows have shape {theirs[1:]}")
            return


def _ancestors(steps: dict[int, ShapeStep], start: list[int]) -> set[int]:
    """The steps ``start`` are computed from, and those they are computed from, and so on (``start`` too)."""
    seen, frontier = set(), list(start)
    while frontier:
        i = frontier.pop()
        if i in seen or i not in steps:
            continue
        seen.add(i)
        frontier.extend(p for p in steps[i].parents if type(p) is int)
    return seen


def _shape_departures(steps: dict[int, ShapeStep], raised: list, reference_steps: list[Step], given: tuple = ()) -> list[int]:
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


def joined_wrong(diagnosis: Diagnosis, stem: str, steps: dict[int, ShapeStep], start: list, reference_steps: list[Step], expected,
                 folder: Path | None) -> bool:
    """A ``torch.cat`` / ``torch.stack`` of the student's, on the way to what differs (``start``), that
    makes a shape the reference never makes from pieces of the right shape (see
    :func:`grader.diagnosis.wrong_shapes.wrong_join`): shown as where the wrong shape is made, with a note
    saying what it joins, and, for a wrong number of pieces made in a loop, that loop's line. True
    when shown."""
    if folder is None:
        return False
    join = wrong_join(steps, start, reference_steps, expected)
    if join is None:
        return False
    at, code = line_at(steps[join.step].where, folder, stem)
    if not at:
        return False
    number = int(at.split(", line ")[1].split(" ")[0])
    diagnosis.origin, diagnosis.origin_code, diagnosis.origin_kind = (
        f"{at} (a step of shape {join.shape}, which the reference never makes)", code, "shape")
    what = "stacks" if steps[join.step].label == "stack" else "joins"
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
        where = steps[p].where
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
