"""Find the first step of a computation where the student's values leave the reference's.

Both runs are recorded by :mod:`grader.sandbox.trace` on the same inputs: the student's in the
sandbox, the reference's in this process. The reference's steps are named by role
(projections, scores, what softmax receives, weights, weights after dropout, context, merged
heads, output: :mod:`grader.diagnosis.stages`); each is looked for, by value, anywhere among the student's steps, so any
correct way of writing a step is found. The first reference step that the student's steps do
not contain is reported, with both values.
"""

from __future__ import annotations

import torch

from grader.diagnosis.catalog import same_tensor
from grader.diagnosis.stages import MATMULS, OUTPUT, PROJECTIONS, SOFTMAX_INPUT, Localization, Stage, stages
from grader.sandbox.protocol import ShapeStep, Step


def _matches(stage: Stage, value: torch.Tensor) -> bool:
    for candidate in (stage.value, *stage.alternatives):
        if value.numel() == candidate.numel() and same_tensor(value.reshape(candidate.shape), candidate):
            return True
    return False


def first_difference(reference_steps: list[Step], reference_output, student_steps: list[Step],
                     student_output) -> Localization | None:
    """The first reference step that no student step reproduces, or None if all are there.

    "Yours" is the student's step that plays its part: among the steps made after the last one
    that matched the reference, one of the same size (a step of the same kind first, then one
    with a relation to the expected value, :mod:`grader.diagnosis.relations`); ``step`` is the
    index of the first student step holding that value (where it was computed)."""
    theirs = [step for step in student_steps if isinstance(step.value, torch.Tensor)]
    if isinstance(student_output, torch.Tensor):  # the output, read as one more step (made at no line)
        theirs.append(Step("output", student_output, ["", 0, 0], []))
    found = stages(reference_steps, reference_output)
    after = -1  # the student's step where the last matched stage was made
    shapes = {tuple(step.value.shape) for step in theirs}
    kinds = {_kind(step.label) for step in theirs}
    parts_along = None  # how the student computes the stages one part at a time (_ways_of_parts)
    right: list[int] = []  # the student's steps holding the stages matched so far
    for k, stage in enumerate(found):
        matched = [i for i, step in enumerate(theirs) if _matches(stage, step.value)]
        if stage.name == OUTPUT and isinstance(student_output, torch.Tensor):  # a right value changed before it is returned
            matched = [i for i in matched if i == len(theirs) - 1]
        if matched:
            after = max(after, next((i for i in matched if i > after), matched[0]))
            if theirs[after].value.shape == stage.value.shape:  # the value in its shape, not only its numbers in order
                right.append(after)
            continue
        held = _parts_held(stage.value, theirs) if stage.name != OUTPUT else []  # the output is judged whole
        in_parts = next(((way, holding) for way, _, holding in held if None not in holding), None)
        if in_parts is not None:  # one head at a time, each head's part right: the stage is right
            parts_along, first = in_parts
            after = max(after, next((i for i in first if i > after), first[0]))
            continue
        if stage.name == SOFTMAX_INPUT and (masked := _masked_after_exponential(stage.value, theirs, after)) is not None:
            after = masked  # a softmax by hand that masks the exponentials: the masked scores are never a step
            right.append(masked)
            continue
        if parts_along is not None:
            place = _part_differing(stage, found, k, parts_along, theirs, after)
            if place is not None:
                return place
        # A part never computed, where the output has the reference's shape (else the shape is what
        # differs, and the wrong join that makes it is shown: joined_wrong in shape_error).
        same_shape = not (isinstance(student_output, torch.Tensor) and isinstance(reference_output, torch.Tensor)
                          and student_output.shape != reference_output.shape)
        place = _part_never_computed(stage, theirs, held) if same_shape else None
        if place is not None:
            return place
        # No step of theirs has this stage's shape, nor is of its kind (one fused call,
        # scaled_dot_product_attention, stands for the scores, the weights and more): the stage is not a
        # step of theirs to name as differing; the first later stage they do compute, and that differs,
        # is named instead (if there is one). A step of its kind in another shape (queries of the wrong
        # size) is theirs: that stage is named.
        if tuple(stage.value.shape) not in shapes and _kind(stage.label) not in kinds and any(
                tuple(later.value.shape) in shapes and not any(_matches(later, step.value) for step in theirs)
                for later in found[k + 1:]):
            continue
        return _differing(found, k, theirs, after, right, len(student_steps))
    return None


def _differing(found: list[Stage], k: int, theirs: list, after: int, right: list[int], recorded: int) -> Localization:
    """The stage ``found[k]`` as the first that differs, with the steps around it, and "yours": the
    student's step that plays its part (:func:`_yours`), if any. ``recorded``: how many steps of the
    student's were recorded (``theirs`` may end with their output, which is not a step)."""
    stage = found[k]
    place = Localization(stage.name, stage.value, None,
                         before=found[k - 1].value if k else None,
                         after=found[k + 1].value if k + 1 < len(found) else None,
                         softmax_input=next((s.value for s in found if s.name == SOFTMAX_INPUT), None),
                         matched=tuple(i for i in right if i < recorded))
    index = _yours(stage, theirs, after, place, [s.value for s in found[:k]])
    if index is not None:
        place.actual = theirs[index].value
        place.same_kind = stage.name == OUTPUT or _kind(theirs[index].label) == _kind(stage.label)
        # The line shown is the line of the step shown as yours; the output is not a step:
        # the first step holding its value computed it.
        place.step = _first_holding(theirs, place.actual, after) if stage.name == OUTPUT else index
        if place.step >= recorded:  # only the returned output holds it
            place.step = None
    return place


def _masked_after_exponential(given: torch.Tensor, theirs: list, after: int) -> int | None:
    """The student's first step after ``after`` holding the exponential of the softmax's input
    ``given`` (masked: its hidden entries exp to 0), shifted by a maximum or not, where ``given`` is
    masked: a softmax written by hand that masks the exponentials (``exp(s) * ~mask``), a correct
    way that never makes the masked scores; None otherwise."""
    hidden = ~torch.isfinite(given) | (given < -1e4)
    if not hidden.any() or hidden.all():
        return None
    finite = given.masked_fill(hidden, -torch.inf).double()
    exponentials = [torch.exp(finite), torch.exp(finite - finite[~hidden].max())]
    rowwise = torch.exp(finite - finite.amax(dim=-1, keepdim=True).clamp_min(finite[~hidden].min()))
    exponentials += [rowwise]
    # Shifted by another number per row only where the student writes the softmax by hand: a softmax
    # output masked afterwards (torch.where(mask, 0, weights)) is such a multiple too, and no softmax.
    by_hand = not any(step.label in ("softmax", "_softmax") and step.value.shape == given.shape for step in theirs)
    return next((i for i, t in enumerate(step.value for step in theirs) if i > after and t.shape == given.shape
                 and t.is_floating_point() and (any(same_tensor(t, e) for e in exponentials)
                                                or (by_hand and _row_multiple(t, rowwise, hidden)))), None)


def _row_multiple(t: torch.Tensor, rowwise: torch.Tensor, hidden: torch.Tensor) -> bool:
    """Whether ``t`` is 0 where ``hidden`` and, on every row, a positive multiple of ``rowwise`` (the
    exponentials shifted by any number per row, as ``exp(s - s.amax(-1))`` over every entry, the
    hidden ones too, shifts them: softmax does not change)."""
    if hidden.all(dim=-1).any():
        return False
    t = t.double()
    if not torch.isfinite(t).all() or not torch.allclose(t[hidden], torch.zeros_like(t[hidden]), atol=1e-7):
        return False
    ratio = (t / rowwise).masked_fill(hidden, 0.0)
    first = ratio.amax(dim=-1, keepdim=True)
    if not (first > 0).all():
        return False
    return bool(torch.isclose(ratio, first.expand_as(ratio), rtol=1e-4, atol=0)[~hidden].all())


def _ways_of_parts(value: torch.Tensor) -> list[tuple[int, int]]:
    """How a value may be computed one part at a time: ``(dim, 0)``, its entries along ``dim`` one
    at a time (``value[:, h]``: one head of ``(b, heads, n, d)``), or ``(0, m)``, its rows ``k``,
    ``k + m``, ``k + 2m``, ... for each ``k < m`` (``value[k::m]``: one head of ``(b * heads, n, d)``
    with the heads interleaved, as d2l's ``transpose_qkv`` lays them out)."""
    ways = [(dim, 0) for dim in range(value.dim()) if value.shape[dim] >= 2]
    if value.dim() >= 1:
        ways += [(0, m) for m in range(2, value.shape[0]) if value.shape[0] % m == 0]
    return ways


def _parts(value: torch.Tensor, way: tuple[int, int]) -> list[torch.Tensor]:
    dim, stride = way
    if stride:
        return [value[k::stride] for k in range(stride)]
    return [value.select(dim, j) for j in range(value.shape[dim])]


def _part_name(way: tuple[int, int], j: int) -> str:
    dim, stride = way
    return f"[{j}::{stride}]" if stride else f"[{', '.join([':'] * dim + [str(j)])}]"


def _holding(theirs: list, value: torch.Tensor) -> int | None:
    """The first student step whose value is ``value`` (its shape too), else None."""
    return next((i for i, step in enumerate(theirs) if step.value.shape == value.shape and same_tensor(step.value, value)),
                None)


def _parts_held(value: torch.Tensor, theirs: list) -> list[tuple[tuple[int, int], list, list]]:
    """For each way of taking ``value`` in parts (:func:`_ways_of_parts`): ``(way, parts, [the first
    student step holding each part, or None])``. Every part held one way: a loop over heads computes
    the value, each head right."""
    return [(way, parts, [_holding(theirs, part) for part in parts])
            for way in _ways_of_parts(value) for parts in [_parts(value, way)]]


def _part_differing(stage: Stage, found: list, k: int, way: tuple[int, int], theirs: list, after: int) -> Localization | None:
    """After a stage the student computes in parts taken ``way`` (:func:`_parts_held`), the
    first part of this stage that no step of theirs holds, against their step of the same kind and
    the part's shape that holds none (the first such after the last matched step): None where they
    have no such step (the stage is then judged whole)."""
    value = stage.value
    if way not in _ways_of_parts(value):
        return None
    parts = _parts(value, way)
    missing = [j for j, part in enumerate(parts) if _holding(theirs, part) is None]
    shape = parts[0].shape
    candidates = [i for i, step in enumerate(theirs) if step.value.shape == shape and stage.label
                  and _kind(step.label) == _kind(stage.label) and not any(same_tensor(step.value, part) for part in parts)]
    candidates = [i for i in candidates if i > after] or candidates
    if not missing or not candidates:
        return None
    j = missing[0]

    def part_of(other: torch.Tensor | None) -> torch.Tensor | None:
        return _parts(other, way)[j] if other is not None and other.shape == value.shape else None

    index = candidates[0]
    softmax_input = next((s.value for s in found if s.name == SOFTMAX_INPUT), None)
    return Localization(f"{stage.name}, its part {_part_name(way, j)} (your code computes it one part at a time)",
                        parts[j], theirs[index].value, index,
                        before=part_of(found[k - 1].value) if k else None,
                        after=part_of(found[k + 1].value) if k + 1 < len(found) else None,
                        softmax_input=part_of(softmax_input), parts_along=way)


def _part_never_computed(stage: Stage, theirs: list, held: list) -> Localization | None:
    """A stage the student computes one part at a time, every part they compute right, where some
    part is computed by no step of theirs (a loop over heads that stops one head short): the first
    such part, with ``step`` the student's last step holding a part (the line computing the parts)
    and ``missing_part`` set; None otherwise. ``held``: :func:`_parts_held` of the stage's value."""
    if not stage.label or stage.name == OUTPUT:
        return None
    for way, parts, holding in held:
        computed = [i for i in holding if i is not None]
        kind = [i for i, step in enumerate(theirs) if _kind(step.label) == _kind(stage.label)
                and step.value.shape == parts[0].shape]
        if computed and None in holding and kind and set(kind) <= set(computed):
            j = holding.index(None)
            done = ", ".join(_part_name(way, n) for n, i in enumerate(holding) if i is not None)
            return Localization(f"{stage.name}, its part {_part_name(way, j)} (your code computes it one part at a "
                                f"time: {done}, each right, and never this one)", parts[j], None, max(kind),
                                parts_along=way, missing_part=True)
    return None


def _first_holding(theirs: list, value: torch.Tensor, after: int) -> int:
    """The first student step after ``after`` (else anywhere) whose value is ``value``."""
    same = [i for i, step in enumerate(theirs) if step.value.shape == value.shape and same_tensor(step.value, value)]
    return next((i for i in same if i > after), same[0] if same else len(theirs) - 1)


def _kind(label: str) -> str:
    return "matmul" if label in MATMULS else label


def _yours(stage: Stage, theirs: list, after: int, place: Localization, right: list) -> int | None:
    """The index of the student's step playing this stage's part (see :func:`first_difference`)."""
    from grader.diagnosis.relations import relation

    if stage.name == OUTPUT:
        return len(theirs) - 1 if theirs and theirs[-1].label == "output" else None
    later = [i for i in range(after + 1, len(theirs))] or list(range(len(theirs)))
    sized = [i for i in later if theirs[i].value.numel() == stage.value.numel()]
    # The student's step of the same kind (softmax, its input, a projection) plays the part:
    # made after the last matching step if one is, else anywhere (the student may compute the
    # keys before the queries: the hooks name each projection by its submodule).
    for pool in (sized, range(len(theirs))):
        labelled = [i for i in pool if stage.label and theirs[i].label == stage.label
                    and theirs[i].value.numel() == stage.value.numel()]
        if labelled:
            return next((i for i in labelled if theirs[i].value.shape == stage.value.shape), labelled[0])
    # A projection computed by no layer of its name has no step of the student's that plays it
    # (another layer's output is that layer's step, whatever it holds).
    if any(stage.label == labels[0] for _, labels in PROJECTIONS):
        return None
    # Else a step with a relation to the expected value; a step holding a value already matched
    # (a copy of the previous stage) plays no new part. A step of the same shape alone is not
    # shown as "yours": it may be another value altogether (what a hand-written softmax exponentiates).
    fresh = [i for i in sized if not any(t.shape == theirs[i].value.shape and same_tensor(t, theirs[i].value) for t in right)]
    for i in fresh:
        place.same_kind = _kind(theirs[i].label) == _kind(stage.label)
        if relation(place, theirs[i].value):
            return i
    return None


def shape_departure(reference_steps: list[Step], student_steps: list[Step] | list[ShapeStep]) -> int | None:
    """The index of the first student step that gives a shape the reference's steps of the same
    kind (label: ``squeeze``, ``view``, ``matmul`` ...) never give: where a wrong shape was made;
    None if there is none. Kinds of step the reference never takes (another style) are not judged.
    ``student_steps`` may hold shapes alone (each a :class:`~grader.sandbox.protocol.ShapeStep`)."""
    shapes: dict[str, set] = {}
    for step in reference_steps:
        if isinstance(step.value, torch.Tensor):
            shapes.setdefault(step.label, set()).add(tuple(step.value.shape))
    for i, step in enumerate(student_steps):
        shape = tuple(step.shape) if isinstance(step, ShapeStep) else tuple(step.value.shape)
        if step.label in shapes and shape not in shapes[step.label]:
            return i
    return None
