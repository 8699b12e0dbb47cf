"""A reduction of the student's held against the reference's: which dimension it drops, or should.

Proven from shapes alone: a reduction without keepdim whose result no longer broadcasts with what it
is combined with, the reference reducing a value of the same shape along another dimension, and how
the reference reduces a value that the student reduces whole.
"""

from __future__ import annotations

import itertools

import torch

from grader.diagnosis.known_values import KnownValues
from grader.sandbox.protocol import ShapeStep, Step


def dropped_dimension(steps: dict[int, ShapeStep], raised: list) -> tuple | None:
    """Of what the call that raised received (``raised``, indices of ``steps``), a reduction step that
    dropped one dimension of what it reduced (``sum(dim=-1)`` without keepdim), such that with that
    dimension kept (size 1) every operand broadcasts, where as they are they do not: ``(step, the
    dimension, the shape it would have, the other operands' shape)``; else None."""
    received = [p for p in raised if type(p) is int and p in steps]
    if len(received) < 2:
        return None
    shapes = {p: tuple(steps[p].shape) for p in received}
    if broadcast(*shapes.values()):
        return None  # they broadcast as they are: the error is another one
    for p in received:
        label, shape, _, parents = steps[p]
        sources = [q for q in parents if type(q) is int and q in steps]
        if label.split("[")[0] not in REDUCTIONS or len(sources) != 1:
            continue
        source = tuple(steps[sources[0]].shape)
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


def _reductions_of_the_same(steps: dict[int, ShapeStep], k: int, reference_steps: list[Step]) -> tuple[tuple, list[tuple]]:
    """The shape of what the student's reduction ``steps[k]`` reduced, and the result shapes of the
    reference's reductions of the same kind of a value of that very shape."""
    sources = [q for q in steps[k].parents if type(q) is int and q in steps]
    source = tuple(steps[sources[0]].shape) if len(sources) == 1 else ()
    kind = steps[k].label.split("[")[0]
    shapes = []
    for step in reference_steps:
        parents = [q for q in step.parents if type(q) is int and 0 <= q < len(reference_steps)]
        if (step.label.split("[")[0] == kind and len(parents) == 1 and isinstance(step.value, torch.Tensor)
                and tuple(reference_steps[parents[0]].value.shape) == source):
            shapes.append(tuple(step.value.shape))
    return source, shapes


def reference_reduction(steps: dict[int, ShapeStep], k: int, reference_steps: list[Step]) -> tuple[int, tuple] | None:
    """``(dimension, shape)`` when the reference reduces a value of the shape the student's reduction
    ``steps[k]`` reduced, by the same operation, always over one other dimension it can be told by
    (dropping it, without keepdim): then keepdim is not the fix, the dimension is."""
    source, shapes = _reductions_of_the_same(steps, k, reference_steps)
    mine = tuple(steps[k].shape)
    if not shapes or len(set(shapes)) != 1 or shapes[0] == mine or len(shapes[0]) != len(source) - 1:
        return None
    dims = [d for d in range(len(source)) if source[:d] + source[d + 1:] == shapes[0]]
    return (dims[0], shapes[0]) if len(dims) == 1 else None


def reduced_otherwise(steps: dict[int, ShapeStep], k: int, reference_steps: list[Step]) -> bool:
    """Whether the reference reduces a value of the shape the student's reduction ``steps[k]`` reduced,
    by the same operation, without keeping the dimension (so "keepdim=True" is not what it does)."""
    source, shapes = _reductions_of_the_same(steps, k, reference_steps)
    return bool(shapes) and all(len(s) != len(source) for s in shapes)


def broadcast(*shapes: tuple) -> bool:
    """Whether ``shapes`` broadcast together (torch's rule: aligned from the right, each size equal or 1).
    ``torch.broadcast_shapes`` says the same, but its error costs some 20 ms."""
    return all(len(set(sizes) - {1}) <= 1 for sizes in itertools.zip_longest(*(s[::-1] for s in shapes), fillvalue=1))


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


REDUCTIONS = frozenset({"sum", "mean", "amax", "max", "amin", "min", "norm", "logsumexp", "prod"})


def whole_reduction(steps: list[Step], i: int) -> bool:
    """Whether the student's step ``i`` reduces a whole tensor (of more than one number) to one number."""
    step = steps[i]
    parents = [p for p in step.parents if type(p) is int and 0 <= p < i]
    return (step.label.split("[")[0] in REDUCTIONS and step.value.numel() == 1 and len(parents) == 1
            and steps[parents[0]].value.numel() > 1)


def reduced_along(reference_steps: list[Step], label: str, source: torch.Tensor) -> list[tuple[int, bool]]:
    """``(dimension, kept)`` for each way the reference's steps of kind ``label`` (``sum``) reduce a
    value equal to ``source`` (same shape) to more than one number: the dimension counted from the
    end, and whether the result keeps it (``keepdim=True``, size 1); else []."""
    values = KnownValues(reference_steps)
    holding = set(values.matching(source, exact=True))
    found = []
    for step in values.steps:
        if step.label != label or step.value.numel() <= 1 or not holding & set(step.parents):
            continue
        shape, out = tuple(source.shape), tuple(step.value.shape)
        kept = len(out) == len(shape)
        dims = [d for d in range(len(shape)) if (out[d] == 1 and shape[d] != 1 if kept else True)]
        if not kept and len(out) == len(shape) - 1:
            dims = [d for d in range(len(shape)) if shape[:d] + shape[d + 1:] == out]
        if len(dims) == 1:
            found.append((dims[0] - len(shape), kept))
    return sorted(set(found))
