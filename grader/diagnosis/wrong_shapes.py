"""Where a wrong shape was made first, proven from shapes alone.

For an error, the sandbox sends the shapes of the student's steps, not their values. A step's shape
is known when the reference's steps of its kind have it (or it is one part of such a value, as a loop
over heads takes it); walking back from what the call that raised received, the first unknown step
is where the wrong shape was made. Also a ``torch.cat`` / ``torch.stack`` of right pieces, along the
wrong dimension or in the wrong number (:func:`wrong_join`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from grader.diagnosis.known_values import PARTS
from grader.diagnosis.origin import first_unknown
from grader.sandbox.protocol import ShapeStep, Step


def one_part_shapes(shape: tuple) -> set[tuple]:
    """The shapes of one part of a value of ``shape``, taken as a loop over heads (or over queries)
    takes it (:func:`grader.diagnosis.localize._ways_of_parts`): one index of a dimension
    (``value[:, h]``), the same keeping that dimension (``value[:, i:i + 1]``), or every ``m``-th
    row (``value[k::m]``)."""
    parts = {shape[:d] + shape[d + 1:] for d in range(len(shape)) if shape[d] >= 2}
    parts |= {shape[:d] + (1,) + shape[d + 1:] for d in range(len(shape)) if shape[d] >= 2}
    if shape:
        parts |= {(shape[0] // m, *shape[1:]) for m in range(2, shape[0]) if shape[0] % m == 0}
    return parts


# Kinds of step that make the same shapes from the same value: indexing with None is unsqueeze.
ALIKE = ({"__getitem__", "unsqueeze"},)


def shape_knowledge(steps: dict[int, ShapeStep], reference_steps: list[Step], given: tuple = ()):
    """``known(i)``: whether the student's step ``i`` (of ``steps``: ``{index: ShapeStep}``) has a
    shape the reference's steps of its kind have (any step's, for a kind it never takes), or is one part of such a value computed as a loop over heads computes it: a part taken
    (``queries[:, h]``) of a value whose shape is known, where the reference takes no part of that
    kind and number of dimensions, and something is computed from it as from a part (a part whose
    every use makes a shape the reference never makes, as rows taken along the wrong dimension,
    is not another way); a part taken so of what the probe gave (``given``: the shapes of its
    tensors; ``queries[:, i:i + 1]``, from no step of the student's); and what is computed from
    parts with the shape of one part of the reference's steps of its kind (``scores`` of one head,
    of one query). Kinds that make the same shapes (``x[:, None]``, ``x.unsqueeze(1)``: ``ALIKE``)
    share theirs. A step of another correct approach is no wrong shape. Also the reference's shapes
    by kind."""
    shapes: dict[str, set] = {}
    for step in reference_steps:
        if isinstance(step.value, torch.Tensor):
            shapes.setdefault(step.label, set()).add(tuple(step.value.shape))
    every = set().union(*shapes.values()) if shapes else set()
    alike = {label: set().union(*(shapes.get(k, set()) for k in kinds)) for kinds in ALIKE for label in kinds
             if label in shapes}
    known: dict[int, bool] = {}
    part: dict[int, bool] = {}  # one part of a value of the reference's, computed as a loop over heads does
    taken: list[int] = []  # the parts taken
    for i in sorted(steps):  # a step's parents come before it
        label, shape = steps[i].label, tuple(steps[i].shape)
        mine = alike.get(label, shapes.get(label, every))
        parents = [p for p in steps[i].parents if type(p) is int and p < i and p in steps]
        unsent = not parents and any(type(p) is int and p not in steps for p in steps[i].parents)  # made before the steps sent
        known[i], part[i] = True, False
        if not shape or shape in mine:
            continue
        if (label.split("[")[0] in PARTS and not any(len(s) == len(shape) for s in shapes.get(label, ()))
                and (any(known[p] and shape in one_part_shapes(tuple(steps[p].shape)) for p in parents)
                     or any(known[p] and shape in one_part_shapes(split) for p in parents
                            for split in _splits_of(tuple(steps[p].shape), every))
                     or (not parents and any(shape in one_part_shapes(g) for g in given))
                     or (unsent and any(len(r) == len(shape) + 1 and shape in one_part_shapes(r) for r in every)))):
            part[i] = True
            taken.append(i)
        elif (any(part[p] for p in parents) or unsent) and any(shape in one_part_shapes(s) for s in mine):
            part[i] = True  # from parts, or from steps made before those sent: as a loop over parts makes it
        else:
            known[i] = False
    for i in taken:
        uses = [j for j in steps if j > i and i in steps[j].parents]
        if uses and not any(known[j] for j in uses):
            known[i] = part[i] = False
    return (lambda i: i not in steps or known.get(i, True)), shapes


def _splits_of(shape: tuple, every: set) -> list[tuple]:
    """The reference's shapes that split the last dimension of ``shape`` in two (``(b, n, 100)`` into
    ``(b, n, 5, 20)``: heads): one head's columns (``q[:, :, cols]``) are one part of such a value."""
    return [s for s in every if len(s) == len(shape) + 1 and s[:len(shape) - 1] == shape[:-1]
            and s[-2] * s[-1] == shape[-1]] if shape else []


def shape_origin(steps: dict[int, ShapeStep], raised: list, reference_steps: list[Step], given: tuple = ()) -> int | None:
    """The student's step (an index of ``steps``: ``{index: ShapeStep}``) where
    a shape the reference never makes (:func:`shape_knowledge`) is made first, walking back from
    what the call that raised received (``raised``)."""
    known, _ = shape_knowledge(steps, reference_steps, given)

    def parents_of(i: int) -> list:
        return [p for p in steps[i].parents if type(p) is not int or p < i]

    return first_unknown(raised, parents_of, known)


def first_unknown_shape(steps: dict[int, ShapeStep], reference_steps: list[Step], given: tuple = ()) -> int | None:
    """The student's first step, in the order made, of a kind the reference takes and a shape it
    never makes (:func:`shape_knowledge`); None if there is none."""
    known, shapes = shape_knowledge(steps, reference_steps, given)
    return next((i for i in sorted(steps) if steps[i].label in shapes and not known(i)), None)


# -- a join (torch.cat, torch.stack) that makes a wrong shape --------------------------------------------
JOINS = {"cat": "cat", "concat": "cat", "concatenate": "cat", "stack": "stack"}


@dataclass
class Join:
    """A student's ``torch.cat`` / ``torch.stack`` (step ``step``) whose shape the reference never
    makes, proven from shapes alone: it joins ``count`` pieces of shape ``piece`` along ``dim`` into
    ``shape``; the reference's ``expected`` shape holds ``expected_count`` such pieces along that
    dimension (a piece missing or too many: ``expected_dim`` is ``dim``), or the reference joins pieces
    of that very shape, as many, along ``expected_dim`` (another axis)."""

    step: int
    pieces: list[int]
    piece: tuple
    count: int
    dim: int
    shape: tuple
    expected: tuple
    expected_count: int
    expected_dim: int
    dim_known: bool = True  # False: the shapes fit a join along more than one dimension, all needing as many pieces


def _join_dims(kind: str, shape: tuple, pieces: list[tuple]) -> list[int]:
    """The dimensions along which ``pieces`` joined make ``shape`` (several: one piece, any of them)."""
    if kind == "stack":
        return [d for d in range(len(shape)) if shape[d] == len(pieces)
                and all(shape[:d] + shape[d + 1:] == p for p in pieces)]
    return [d for d in range(len(shape)) if all(len(p) == len(shape) and p[:d] + p[d + 1:] == shape[:d] + shape[d + 1:]
                                                for p in pieces) and sum(p[d] for p in pieces) == shape[d]]


def wrong_join(steps: dict[int, ShapeStep], start: list, reference_steps: list[Step],
               expected: tuple | None = None) -> Join | None:
    """Walking back from ``start`` (indices of ``steps``: ``{index: ShapeStep}``),
    the first join whose shape neither the reference's steps nor ``expected`` (the shape it should
    have: the output's, or what the layer it feeds is given in the reference) have, and whose pieces,
    all of one shape, either the reference joins too, as many, along another dimension, or would fill
    ``expected`` (differing from it along the joined dimension alone) if there were another number of
    them. None when the shapes do not prove it."""
    known = {tuple(s.value.shape) for s in reference_steps if isinstance(s.value, torch.Tensor)}
    if expected is not None:
        known.add(tuple(expected))
    reference_joins = _reference_joins(reference_steps)
    found = _unknown_joins(steps, start, known)
    for i in sorted(found):
        kind, shape = JOINS[steps[i].label], tuple(steps[i].shape)
        pieces = [p for p in steps[i].parents if type(p) is int and p in steps]
        shapes = [tuple(steps[p].shape) for p in pieces]
        dims = _join_dims(kind, shape, shapes)
        if not pieces or len(set(shapes)) != 1 or not dims:
            continue
        piece = shapes[0]
        # The reference joins pieces of this shape, as many, along another dimension: another axis.
        axes = {(d, s) for k, p, n, d, s in reference_joins if k == kind and p == piece and n == len(pieces)}
        if len(dims) == 1 and len(axes) == 1 and next(iter(axes))[0] != dims[0]:
            (d, s), = axes
            return Join(i, pieces, piece, len(pieces), dims[0], shape, s, len(pieces), d)
        # Another number of such pieces would make a shape the reference has: one piece missing, or more.
        size = {d: 1 if kind == "stack" else piece[d] for d in dims}
        # Only against the shape it should have (the output's, what the layer it feeds is given): any
        # other shape of the reference's may differ from it along that dimension by chance.
        counts = {(d, r) for r in ([expected] if expected is not None else []) for d in dims if len(r) == len(shape)
                  and r != piece and r[d] != shape[d] and size[d] and r[d] % size[d] == 0
                  and r[:d] + r[d + 1:] == shape[:d] + shape[d + 1:]}
        if len(counts) == 1:
            (d, r), = counts
            return Join(i, pieces, piece, len(pieces), d, shape, r, r[d] // size[d], d)
        # No shape it should have is known (the call that raised is no layer: a reshape): a piece fewer
        # or more than a shape of the reference's that differs from it along the joined dimension alone
        # (a loop over heads one short, its results stacked). Pieces whose join fits several dimensions
        # (stacked along 1 or 2 where both have that size) are said without one, if all need as many.
        if expected is None:  # (then no count was tried above)
            near = sorted((d, r) for r in known for d in dims if len(r) == len(shape) and r[d] != shape[d] and size[d]
                          and r[d] % size[d] == 0 and abs(r[d] // size[d] - len(pieces)) == 1
                          and r[:d] + r[d + 1:] == shape[:d] + shape[d + 1:])
            if near and len({r[d] // size[d] for d, r in near}) == 1 and (len(near) == 1 or len(dims) == len(near)):
                d, r = near[0]
                return Join(i, pieces, piece, len(pieces), d, shape, r, r[d] // size[d], d, dim_known=len(near) == 1)
    return None


def _reference_joins(reference_steps: list[Step]) -> list[tuple]:
    """``(kind, piece shape, count, dim, shape)`` of each of the reference's own joins of pieces of
    one shape along one dimension."""
    reference_joins = []
    for i, s in enumerate(reference_steps):
        kind = JOINS.get(s.label)
        parts = [p for p in s.parents if type(p) is int and 0 <= p < i]
        if kind and parts and isinstance(s.value, torch.Tensor):
            shapes = [tuple(reference_steps[p].value.shape) for p in parts]
            dims = _join_dims(kind, tuple(s.value.shape), shapes)
            if len(set(shapes)) == 1 and len(dims) == 1:
                reference_joins.append((kind, shapes[0], len(parts), dims[0], tuple(s.value.shape)))
    return reference_joins


def _unknown_joins(steps: dict[int, ShapeStep], start: list, known: set) -> list[int]:
    """Walking back from ``start``: the student's joins whose shape is none of ``known``."""
    seen, frontier, found = set(), [i for i in start if type(i) is int], []
    while frontier:
        i = frontier.pop()
        if i in seen or i not in steps:
            continue
        seen.add(i)
        frontier.extend(p for p in steps[i].parents if type(p) is int and p < i)
        if JOINS.get(steps[i].label) and tuple(steps[i].shape) not in known:
            found.append(i)
    return found
