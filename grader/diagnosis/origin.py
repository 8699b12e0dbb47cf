"""Where a wrong value (or a wrong shape) was made first: walk back through what each step was computed from.

The sandbox records, for each step of the student's computation, the earlier steps it was
computed from (:mod:`grader.sandbox.trace`). A step is *known* when its value (or, for an error,
its shape) is one the reference computes on the same inputs at some step of its own. From a step
that differs, :func:`first_unknown` walks back through its parents while they too are unknown;
the steps where the walk stops are computed from known values alone, so it is their own line
that first makes something the reference never makes. That is a fact about the student's values,
not a guess: the diagnosis shows that line, and names no cause.

Layout steps (a transpose, a permute, a view ...) are known when they hold a reference value with
its dimensions in another order: a student may lay out an intermediate otherwise than the
reference and be right, so such a step is never shown as the origin.

Also here: the lines of the student's file that make what a line uses besides tensors (an
attribute, ``self.W_o = nn.Linear(...)``; a number, ``d = keys.shape[1]``) and the whole statement
a line belongs to, read from the text of the taken file with :mod:`ast` (never run).
"""

from __future__ import annotations

import ast
import functools
import itertools
from dataclasses import dataclass
from pathlib import Path

import torch

from grader.diagnosis.catalog import same_tensor
from grader.sandbox.trace import OUTSIDE

LAYOUT = frozenset({"transpose", "permute", "t", "view", "reshape", "contiguous", "unsqueeze", "squeeze",
                    "flatten", "unflatten", "expand", "expand_as", "repeat", "movedim", "swapaxes", "mT", "T",
                    "__getitem__", "clone", "to", "float", "double"})
# Steps that take a part of a tensor: a part that is one index of a dimension of a reference value
# (one head) is known, whatever way the student took it.
PARTS = frozenset({"__getitem__", "select", "narrow", "chunk", "split", "unbind", "tensor_split"})
MAX_LINES = 5  # lines shown for how an attribute is made


class KnownValues:
    """The values the reference computes (its steps, and its output), looked up by size. Masks and
    lengths (bool and integer steps) are compared as numbers; a boolean mask's complement is known too."""

    def __init__(self, reference_steps: list, extra=()):
        self.steps = reference_steps + softmax_by_hand(reference_steps)
        self.by_size: dict[int, list[tuple[int, torch.Tensor]]] = {}
        self.inverted: list[tuple[int, torch.Tensor]] = []  # the complements of the reference's boolean masks
        self.shapes: set[tuple[tuple, bool]] = set()  # (shape, floating) of each value: numbers, or masks and lengths
        values = [(i, s[1]) for i, s in enumerate(self.steps)] + [(-1, t) for t in extra]
        for i, value in values:
            if isinstance(value, torch.Tensor) and value.numel() and not value.is_complex():
                self.by_size.setdefault(value.numel(), []).append((i, value.detach().double()))
                self.shapes.add((tuple(value.shape), value.is_floating_point()))
                if value.dtype == torch.bool:  # its complement: the entries kept (torch.where(allowed, ...)) where
                    # the reference names those it fills (masked_fill(mask, ...)), another correct way; in its
                    # own shape only (never transposed or reshaped: a mask that is neither is no other way)
                    self.inverted.append((i, (~value).detach().double()))

    def matching(self, value: torch.Tensor, layout: bool = False, exact: bool = False) -> list[int]:
        """The reference's steps holding ``value`` (-1: its output): the same numbers in the same order
        (``exact``: and the same shape; ``layout``: or with the dimensions in another order); a boolean
        mask also where it is one of the reference's inverted, in the same shape."""
        found, boolean = [], value.dtype == torch.bool
        value = value.detach().double()
        for i, known in self.by_size.get(value.numel(), ()):
            if exact and tuple(known.shape) != tuple(value.shape):
                continue
            if same_tensor(value.reshape(known.shape), known):
                found.append(i)
            elif layout and not exact and known.dim() <= 4:
                if any(same_tensor(value.reshape(known.permute(order).shape), known.permute(order))
                       for order in itertools.permutations(range(known.dim()))):
                    found.append(i)
        if boolean:  # a boolean mask that is one of the reference's inverted
            found += [i for i, m in self.inverted if tuple(m.shape) == tuple(value.shape) and same_tensor(value, m)]
        return found

    def only_inverted(self, value: torch.Tensor) -> bool:
        """Whether ``value`` is a boolean mask that the reference computes only inverted (``tril`` of
        the entries kept, where the reference's ``triu`` marks those it fills)."""
        if not isinstance(value, torch.Tensor) or value.dtype != torch.bool:
            return False
        value = value.detach().double()
        same = [tuple(m.shape) == tuple(value.shape) and same_tensor(value, m) for _, m in self.inverted]
        as_computed = [tuple(m.shape) == tuple(value.shape) and same_tensor(value, 1 - m) for _, m in self.inverted]
        return any(same) and not any(as_computed)

    def holds_part(self, value: torch.Tensor, stride: int = 0) -> bool:
        """Whether ``value`` is one index of a dimension of one of the reference's values, with its
        dimensions in any order (one head of the reference's ``(b, heads, n, d)``: a student's slice
        of a value the reference computes, taken where the reference has a dimension of its own);
        ``stride``: or its rows ``k::stride`` (one head of ``(b * heads, n, d)``, heads interleaved)."""
        if not isinstance(value, torch.Tensor) or value.is_complex() or value.numel() <= 1:
            return True
        value, shape = value.detach().double(), tuple(value.shape)
        if stride and value.dim() and any(
                tuple(known.shape) == (shape[0] * stride, *shape[1:]) and any(
                    same_tensor(value, known[k::stride]) for k in range(stride))
                for _, known in self.by_size.get(value.numel() * stride, ())):
            return True
        for numel, known_values in self.by_size.items():
            if numel <= value.numel() or numel % value.numel():
                continue
            for _, known in known_values:
                if known.dim() != value.dim() + 1 or known.dim() > 4:
                    continue
                for order in itertools.permutations(range(known.dim())):
                    moved = known.permute(order)
                    for d in range(moved.dim()):
                        if tuple(moved.shape[:d] + moved.shape[d + 1:]) == shape and any(
                                same_tensor(value, moved.select(d, k)) for k in range(moved.shape[d])):
                            return True
        return False

    def misplaced(self, value: torch.Tensor) -> bool:
        """Whether ``value`` has the shape of one of the reference's values of its kind (numbers, or
        masks and lengths: a row maximum's shape says nothing of lengths), but other values in it,
        though the reference holds its numbers in this order under another shape (``reshape`` where
        ``permute`` is meant: the right numbers, each at a wrong place of the right shape)."""
        if not isinstance(value, torch.Tensor) or value.is_complex() or value.numel() <= 1:
            return False
        return ((tuple(value.shape), value.is_floating_point()) in self.shapes
                and not self.matching(value, exact=True) and bool(self.matching(value)))

    def exp_of_scores(self, value: torch.Tensor) -> bool:
        """Whether ``value`` is the exponential of one of the reference's softmax inputs on every entry
        that softmax input does not mask (below -1e4), up to a number per row along the softmax's
        dimension: a hand-written softmax that exponentiates the scores and masks afterwards (``e *
        keep``), or shifts them first, computes it; a step of another correct way, never a mistake."""
        if not isinstance(value, torch.Tensor) or not value.is_floating_point() or value.numel() <= 1:
            return False
        value = value.detach().double()
        for i, step in enumerate(self.steps):
            if step[0] not in ("softmax input", "_softmax input") or i + 1 >= len(self.steps):
                continue
            given, weights = step[1].detach().double(), self.steps[i + 1][1]
            if given.numel() != value.numel() or tuple(weights.shape) != tuple(given.shape):
                continue
            mine = value.reshape(given.shape)
            kept = torch.isfinite(given) & (given > -1e4)
            if not kept.any() or not bool((mine[kept] > 0).all()):
                continue
            for d in range(given.dim()):
                if not same_tensor(torch.softmax(given, dim=d), weights.double()):
                    continue
                shift = torch.where(kept, torch.log(mine.clamp_min(1e-300)) - given, torch.nan)
                low = torch.where(kept, shift, torch.inf).amin(dim=d, keepdim=True)
                high = torch.where(kept, shift, -torch.inf).amax(dim=d, keepdim=True)
                rows = kept.any(dim=d, keepdim=True)
                if bool(((high - low).abs()[rows] <= 1e-4).all()):
                    return True
        return False

    def holds(self, value, layout: bool = False) -> bool:
        """Whether ``value`` is one of the reference's values (a scalar is never judged)."""
        if not isinstance(value, torch.Tensor) or value.is_complex() or value.numel() <= 1:
            return True
        return bool(self.matching(value, layout))

    def feeds(self, i: int) -> set[int]:
        """What the reference's step ``i`` was computed from, through its layout steps."""
        found, frontier = set(), list(self._parents(i))
        while frontier:
            j = frontier.pop()
            if j in found:
                continue
            found.add(j)
            if self.steps[j][0] in LAYOUT:
                frontier.extend(self._parents(j))
        return found

    def _parents(self, i: int) -> list[int]:
        step = self.steps[i] if 0 <= i < len(self.steps) else []
        return [p for p in (step[3] if len(step) > 3 else ()) if type(p) is int and 0 <= p < i]


def softmax_by_hand(steps: list) -> list:
    """The steps of each of the reference's softmaxes written out by hand, as a student may: the
    maximum (kept dimension or not), the input minus it, its exponential, their sums along the
    softmax's dimension (kept or not), and the same without the maximum; each with its parents, as
    steps after ``steps`` (a student's own way of computing softmax is then not taken for a mistake)."""
    extra: list = []

    def add(label: str, value: torch.Tensor, parents: list) -> int:
        """Append a step; its index in ``steps`` followed by ``extra``."""
        extra.append([label, value, ["", 0, 0], parents])
        return len(steps) + len(extra) - 1

    for i, step in enumerate(steps):
        if step[0] not in ("softmax input", "_softmax input") or i + 1 >= len(steps):
            continue
        given, weights = step[1].double(), steps[i + 1][1]
        dims = [d for d in range(given.dim()) if tuple(weights.shape) == tuple(given.shape)
                and same_tensor(torch.softmax(given, dim=d), weights.double())]
        if not dims or not torch.isfinite(given).any():
            continue
        d = dims[0]
        top = given.amax(dim=d, keepdim=True)
        k_top = add("amax", top, [i])
        add("amax", top.squeeze(d), [i])
        shifted = given - top
        k_shifted = add("sub", shifted, [i, k_top])
        # Shifted by the maximum of the whole tensor, as a student may (softmax is the same whatever
        # the shift): that maximum and what it makes are right too.
        finite = given[torch.isfinite(given)]
        everywhere = finite.max() if finite.numel() else given.amax()
        k_everywhere = add("max", everywhere, [i])
        shifted_all = given - everywhere
        k_shifted_all = add("sub", shifted_all, [i, k_everywhere])
        for source, k_source in ((shifted, k_shifted), (given, i), (shifted_all, k_shifted_all)):
            powered = torch.exp(source)
            k_powered = add("exp", powered, [k_source])
            total = powered.sum(dim=d, keepdim=True)
            k_total = add("sum", total, [k_powered])
            add("sum", total.squeeze(d), [k_powered])
            add("div", powered / total, [k_powered, k_total])
    return extra


@dataclass
class Origin:
    """Where a wrong value was first made: the student's step, and whether what it was computed
    from are values the reference computes and combines at one of its steps (``same_inputs``:
    then this line's own operation makes the difference); else the steps it was computed from."""

    step: int
    same_inputs: bool
    inputs: list[int]
    inputs_known: bool = True  # each input is exactly (shape too) a value the reference computes
    attributes: bool = False  # it also uses the module's own tensors (parameters, buffers), which are not compared
    inverted: tuple = ()  # the inputs that are one of the reference's masks inverted (the entries kept, not those filled)


def first_unknown(start, parents_of, known) -> int | None:
    """The earliest step where a walk back from the unknown steps of ``start`` stops: an unknown
    step whose parent steps are all known (``parents_of(i)``: step indices and attribute names;
    ``known(i)``); None when every step of ``start`` is known."""
    roots, seen = [], set()
    frontier = [i for i in start if not known(i)]
    while frontier:
        i = frontier.pop()
        if i in seen:
            continue
        seen.add(i)
        wrong = [p for p in parents_of(i) if type(p) is int and not known(p)]
        if wrong:
            frontier.extend(wrong)
        else:
            roots.append(i)
    return min(roots) if roots else None


UNINITIALISED = {"empty", "empty_like", "new_empty", "empty_strided"}
# Steps that copy what they are given as it is (``X.clone()``): a copy of what the code was given is
# a way of starting (a tensor to write into), never a wrong value.
COPIES = frozenset({"clone", "detach", "contiguous", "to", "float", "double"})
# Steps that read only the shape (and type) of what they are given (torch.zeros_like(x)).
FOR_SHAPE = frozenset({"zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "new_zeros",
                       "new_ones", "new_empty", "new_full"})


def value_origin(steps: list, start: int, reference_steps: list, extra=(),
                 parts: tuple[int, int] | None = None, proven=()) -> Origin | None:
    """Where the value at ``steps[start]`` first went wrong (see the module docstring). ``parts``: the
    student computes the reference's steps one part at a time, this way (a loop over heads, see
    :func:`grader.diagnosis.localize.first_difference`), so any step of theirs that is one part of a
    value the reference computes is as right as that value, whatever operation made it. ``proven``:
    steps holding a stage's value (the masked exponentials of a softmax written by hand): nothing
    they were computed from, by whatever way of the student's, is where the value goes wrong."""
    values = KnownValues(reference_steps, extra)

    def parents_of(i: int) -> list:
        return [p for p in steps[i][3] if type(p) is not int or p < i] if len(steps[i]) > 3 else []

    behind: set[int] = set()  # the proven steps and what they were computed from
    frontier = [i for i in proven if 0 <= i < len(steps)]
    while frontier:
        i = frontier.pop()
        if i not in behind:
            behind.add(i)
            frontier.extend(p for p in parents_of(i) if type(p) is int and 0 <= p < len(steps))

    # Masks and positions built from nothing the student computed (aranges, ones, their comparisons):
    # a student may build them otherwise than the reference and be right, so they are not judged
    # by value; what they are used in is.
    constant: dict[int, bool] = {}
    starts: set[int] = set()  # tensors made only to be written into: never listed as what a line is computed from
    copies: set[int] = set()  # copies of what the code was given: listed only where the reference holds them so
    for i, step in enumerate(steps):
        constant[i] = not step[1].is_floating_point() and all(type(p) is int and constant.get(p, False) for p in parents_of(i))
        # A tensor filled with one number from nothing or from another's shape alone (torch.zeros,
        # zeros_like, then expanded or cloned, to write rows into), or memory left uninitialised
        # (torch.empty, empty_like): a way of starting, not a value to judge; what is written into it is.
        operation = operation_of(step[0].split("[")[0])
        uniform = step[1].numel() > 1 and bool((step[1] == step[1].flatten()[0]).all())
        from_starts = all(type(p) is int and p in starts for p in parents_of(i))  # expand, clone of one
        if ((uniform and (not parents_of(i) or operation in FOR_SHAPE or (operation in LAYOUT and from_starts)))
                or operation in UNINITIALISED):
            constant[i] = True
            starts.add(i)
        elif operation in COPIES and parents_of(i) and all(p == OUTSIDE for p in parents_of(i)):
            constant[i] = True  # a copy of what the code was given (X.clone()): as right as what it was given
            copies.add(i)

    def known(i: int) -> bool:
        if not 0 <= i < len(steps) or constant.get(i) or i in behind:
            return True
        if steps[i][0].split("[")[0] == "unbind":  # a row of a loop over a tensor (for item in X): as right as X
            return all(known(p) for p in parents_of(i) if type(p) is int)
        if whole_reduction(steps, i):  # one number from a whole tensor: judged like any value
            return bool(values.matching(steps[i][1]))
        if steps[i][0] in LAYOUT and values.misplaced(steps[i][1]):
            return False
        if values.holds(steps[i][1], layout=steps[i][0] in LAYOUT):
            return True
        if steps[i][0] == "exp" and values.exp_of_scores(steps[i][1]):  # another correct softmax
            return True
        if parts is not None and values.holds_part(steps[i][1], stride=parts[1]):
            return True
        return steps[i][0].split("[")[0] in PARTS and values.holds_part(steps[i][1])

    root = first_unknown([start], parents_of, known)
    if root is None:
        return None
    inputs = sorted({p for p in parents_of(root) if type(p) is int and p not in starts
                     and not (p in copies and not values.matching(steps[p][1], exact=True))})
    matched = [values.matching(steps[p][1], exact=True) for p in inputs if steps[p][1].numel() > 1]
    same = all(matched) and (not matched or any(_combines(values, q, matched) for q in range(len(reference_steps))))
    if same:
        return Origin(root, True, [], attributes=any(type(p) is str and p != OUTSIDE for p in parents_of(root)),
                      inverted=tuple(p for p in inputs if values.only_inverted(steps[p][1])))
    # What it was computed from, and the layout steps those came through (a permute before a view);
    # a part (one head) of a reference value is not shown: the reference holds it too.
    inputs = [p for p in inputs if not (steps[p][0].split("[")[0] in PARTS and values.holds_part(steps[p][1]))
              and not (steps[p][0] == "exp" and not values.holds(steps[p][1]) and values.exp_of_scores(steps[p][1]))]
    if not all(matched):  # said: "some of what it is computed from is not what the reference computes": those
        inputs = [p for p in inputs if not values.matching(steps[p][1], exact=True)] or inputs
    shown, frontier = [], list(reversed(inputs))
    while frontier and len(shown) < 8:
        i = frontier.pop()
        if i not in shown:
            shown.append(i)
            if steps[i][0] in LAYOUT and not values.matching(steps[i][1], exact=True):
                # Through a reshape or permute to what it came from, unless that is exactly a value of
                # the reference's: then this layout step is where the value leaves the reference's
                # shape or order, and the line that made the value it reshapes is right.
                frontier.extend(p for p in parents_of(i) if type(p) is int
                                and not values.matching(steps[p][1], exact=True))
    return Origin(root, False, shown, inputs_known=all(matched))


# Operations that, applied twice, give another value than once (by their names after operation_of).
REPEATABLE = frozenset({"div", "mul", "softmax", "exp", "tanh", "sigmoid", "sqrt"})


def operation_of(label: str) -> str:
    """A step's operation by one name, whatever form the code used (``/``, ``/=``, ``div_``: div)."""
    return {"__truediv__": "div", "__itruediv__": "div", "div_": "div", "__mul__": "mul", "__imul__": "mul",
            "mul_": "mul", "_softmax": "softmax"}.get(label, label)


def applied_twice(steps: list, root: int, reference_steps: list) -> int | None:
    """The input of ``steps[root]`` that already holds exactly the result of the reference's own step
    of the same operation (a division by the scale, a softmax), where ``root`` applies that operation
    once more: the operation is applied twice. That input's index, else None."""
    operation = operation_of(steps[root][0])
    if operation not in REPEATABLE or len(steps[root]) <= 3:
        return None
    values = KnownValues(reference_steps)

    def changes(q: int) -> bool:  # the reference's step is that operation and changes what it is given (not / 1)
        if not (0 <= q < len(reference_steps) and operation_of(reference_steps[q][0]) == operation):
            return False
        given = [r for r in (reference_steps[q][3] if len(reference_steps[q]) > 3 else []) if type(r) is int and 0 <= r < q]
        return bool(given) and all(not (tuple(reference_steps[r][1].shape) == tuple(reference_steps[q][1].shape)
                                        and same_tensor(reference_steps[r][1], reference_steps[q][1])) for r in given)

    for p in (p for p in steps[root][3] if type(p) is int and p < root):
        if steps[p][1].numel() > 1 and any(changes(q) for q in values.matching(steps[p][1], exact=True)):
            return p
    return None


def discarded(steps: list, root: int, reference_steps: list, output=None) -> list[int]:
    """The student's steps computed before ``root`` (where a walk stopped) from a value ``root``
    reads too (the same step, or one holding the same value), that nothing of theirs uses afterwards (no later step is computed from them, and they
    are not the output), while each holds exactly a value the reference computes and goes on with (a
    later step of the reference is computed from it): a result computed and dropped
    (``scores.masked_fill(...)`` with nothing to keep what it returns), where the reference keeps it."""
    values = KnownValues(reference_steps)

    def parents_of(i: int) -> set[int]:
        return {p for p in (steps[i][3] if len(steps[i]) > 3 else ()) if type(p) is int and 0 <= p < i}

    # A layer's output is kept twice, by the call inside it and by the layer's hook (``dropout`` of
    # nn.Dropout, at the same line, from that call alone): the hook's record is the same result.
    alias = {k: next(iter(parents_of(k))) for k in range(len(steps)) if len(parents_of(k)) == 1
             and steps[k][2] == steps[next(iter(parents_of(k)))][2]
             and tuple(steps[k][1].shape) == tuple(steps[next(iter(parents_of(k)))][1].shape)
             and same_tensor(steps[k][1], steps[next(iter(parents_of(k)))][1])}
    used = {p for k in range(len(steps)) for p in parents_of(k) if alias.get(k) != p}
    used |= {alias[k] for k in alias if k in used}
    read = [steps[p][1] for p in parents_of(root)]

    def reads_the_same(j: int) -> bool:  # computed from a value that ``root`` reads (the step itself, or its equal)
        return any(tuple(steps[q][1].shape) == tuple(value.shape) and same_tensor(steps[q][1], value)
                   for q in parents_of(j) for value in read)

    used_by_reference = set().union(*(values.feeds(q) for q in range(len(values.steps)))) if values.steps else set()
    found = []
    for j in range(root):
        value = steps[j][1]
        if (j in used or j in alias or not value.is_floating_point() or value.numel() <= 1 or steps[j][0] in LAYOUT
                or not reads_the_same(j)):
            continue
        if isinstance(output, torch.Tensor) and tuple(output.shape) == tuple(value.shape) and same_tensor(output, value):
            continue
        kept = any(k in used and tuple(steps[k][1].shape) == tuple(value.shape) and same_tensor(steps[k][1], value)
                   for k in range(len(steps)) if k != j)  # the same value computed again, and used: nothing is lost
        if not kept and any(q in used_by_reference for q in values.matching(value, exact=True)):
            found.append(j)
    return found


REDUCTIONS = frozenset({"sum", "mean", "amax", "max", "amin", "min", "norm", "logsumexp", "prod"})


def whole_reduction(steps: list, i: int) -> bool:
    """Whether the student's step ``i`` reduces a whole tensor (of more than one number) to one number."""
    step = steps[i]
    parents = [p for p in (step[3] if len(step) > 3 else ()) if type(p) is int and 0 <= p < i]
    return (step[0].split("[")[0] in REDUCTIONS and step[1].numel() == 1 and len(parents) == 1
            and steps[parents[0]][1].numel() > 1)


def reduced_along(reference_steps: list, label: str, source: torch.Tensor) -> list[tuple[int, bool]]:
    """``(dimension, kept)`` for each way the reference's steps of kind ``label`` (``sum``) reduce a
    value equal to ``source`` (same shape) to more than one number: the dimension counted from the
    end, and whether the result keeps it (``keepdim=True``, size 1); else []."""
    values = KnownValues(reference_steps)
    holding = set(values.matching(source, exact=True))
    found = []
    for step in values.steps:
        if step[0] != label or step[1].numel() <= 1 or not holding & set(step[3] if len(step) > 3 else ()):
            continue
        shape, out = tuple(source.shape), tuple(step[1].shape)
        kept = len(out) == len(shape)
        dims = [d for d in range(len(shape)) if (out[d] == 1 and shape[d] != 1 if kept else True)]
        if not kept and len(out) == len(shape) - 1:
            dims = [d for d in range(len(shape)) if shape[:d] + shape[d + 1:] == out]
        if len(dims) == 1:
            found.append((dims[0] - len(shape), kept))
    return sorted(set(found))


def _combines(values: KnownValues, q: int, matched: list[list[int]]) -> bool:
    """Whether the reference's step ``q`` is computed from all the matched values, each from a
    different value of its own (the queries and the keys, not the keys twice)."""
    feeds = values.feeds(q)
    options = [[i for i in m if i in feeds] for m in matched]
    if not all(options):
        return False

    def assign(k: int, taken: list) -> bool:
        if k == len(options):
            return True
        for i in options[k]:
            value = values.steps[i][1]
            if not any(t.shape == value.shape and same_tensor(t.double(), value.double()) for t in taken):
                if assign(k + 1, taken + [value]):
                    return True
        return False

    return assign(0, [])


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


def shape_knowledge(steps: dict, reference_steps: list, given: tuple = ()):
    """``known(i)``: whether the student's step ``i`` (of ``steps``: ``{index: [label, shape, where,
    parents]}``) has a shape the reference's steps of its kind have (any step's, for a kind it never
    takes), or is one part of such a value computed as a loop over heads computes it: a part taken
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
        if isinstance(step[1], torch.Tensor):
            shapes.setdefault(step[0], set()).add(tuple(step[1].shape))
    every = set().union(*shapes.values()) if shapes else set()
    alike = {label: set().union(*(shapes.get(k, set()) for k in kinds)) for kinds in ALIKE for label in kinds
             if label in shapes}
    known: dict[int, bool] = {}
    part: dict[int, bool] = {}  # one part of a value of the reference's, computed as a loop over heads does
    taken: list[int] = []  # the parts taken
    for i in sorted(steps):  # a step's parents come before it
        label, shape = steps[i][0], tuple(steps[i][1])
        mine = alike.get(label, shapes.get(label, every))
        parents = [p for p in steps[i][3] if type(p) is int and p < i and p in steps]
        unsent = not parents and any(type(p) is int and p not in steps for p in steps[i][3])  # made before the steps sent
        known[i], part[i] = True, False
        if not shape or shape in mine:
            continue
        if (label.split("[")[0] in PARTS and not any(len(s) == len(shape) for s in shapes.get(label, ()))
                and (any(known[p] and shape in one_part_shapes(tuple(steps[p][1])) for p in parents)
                     or any(known[p] and shape in one_part_shapes(split) for p in parents
                            for split in _splits_of(tuple(steps[p][1]), every))
                     or (not parents and any(shape in one_part_shapes(g) for g in given))
                     or (unsent and any(len(r) == len(shape) + 1 and shape in one_part_shapes(r) for r in every)))):
            part[i] = True
            taken.append(i)
        elif (any(part[p] for p in parents) or unsent) and any(shape in one_part_shapes(s) for s in mine):
            part[i] = True  # from parts, or from steps made before those sent: as a loop over parts makes it
        else:
            known[i] = False
    for i in taken:
        uses = [j for j in steps if j > i and i in steps[j][3]]
        if uses and not any(known[j] for j in uses):
            known[i] = part[i] = False
    return (lambda i: i not in steps or known.get(i, True)), shapes


def _splits_of(shape: tuple, every: set) -> list[tuple]:
    """The reference's shapes that split the last dimension of ``shape`` in two (``(b, n, 100)`` into
    ``(b, n, 5, 20)``: heads): one head's columns (``q[:, :, cols]``) are one part of such a value."""
    return [s for s in every if len(s) == len(shape) + 1 and s[:len(shape) - 1] == shape[:-1]
            and s[-2] * s[-1] == shape[-1]] if shape else []


def shape_origin(steps: dict, raised: list, reference_steps: list, given: tuple = ()) -> int | None:
    """The student's step (an index of ``steps``: ``{index: [label, shape, where, parents]}``) where
    a shape the reference never makes (:func:`shape_knowledge`) is made first, walking back from
    what the call that raised received (``raised``)."""
    known, _ = shape_knowledge(steps, reference_steps, given)

    def parents_of(i: int) -> list:
        return [p for p in steps[i][3] if type(p) is not int or p < i]

    return first_unknown(raised, parents_of, known)


def first_unknown_shape(steps: dict, reference_steps: list, given: tuple = ()) -> int | None:
    """The student's first step, in the order made, of a kind the reference takes and a shape it
    never makes (:func:`shape_knowledge`); None if there is none."""
    known, shapes = shape_knowledge(steps, reference_steps, given)
    return next((i for i in sorted(steps) if steps[i][0] in shapes and not known(i)), None)


# -- the lines that make what a line uses ----------------------------------------------------------------
def source_tree(path: Path) -> tuple[tuple[str, ...] | None, ast.Module | None]:
    """The lines and the syntax tree of ``path`` (None where it cannot be read or parsed); each
    text is parsed once: a diagnosis asks for the same few files hundreds of times (the trees are
    shared: read them, never change them)."""
    try:
        return _parsed_text(path.read_text(errors="replace"))
    except OSError:
        return None, None


@functools.lru_cache(maxsize=64)
def _parsed_text(text: str):
    try:
        return tuple(text.splitlines()), ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None, None


TRANSPOSING = frozenset({"T", "mT", "H", "mH"})  # read as attributes: the trace follows them through, unrecorded


def _statement_node(path: Path, line: int):
    """The smallest simple statement of ``path`` holding ``line`` (None if there is none)."""
    _, tree = source_tree(path)
    best = None
    for node in ast.walk(tree) if tree is not None else ():
        if (isinstance(node, ast.stmt) and not hasattr(node, "body") and node.lineno <= line <= (node.end_lineno or node.lineno)
                and (best is None or (node.end_lineno - node.lineno) < (best.end_lineno - best.lineno))):
            best = node
    return best


def transposed_at(path: Path, line: int) -> tuple[str, bool]:
    """For the statement of ``path`` at ``line``: the transposing attribute that the value it assigns or
    returns is, as a whole (``m = expr.T``, ``return expr.T``: "T"; ``.mT``, ``.H``, ``.mH``), else "",
    and whether it reads one anywhere.
    The trace follows such attributes through as the same value (:mod:`grader.sandbox.trace`): a step
    recorded there holds the value before it was transposed."""
    node = _statement_node(path, line)
    if node is None:
        return "", False
    value = getattr(node, "value", None)
    whole = (value.attr if isinstance(node, (ast.Assign, ast.AnnAssign, ast.Return)) and isinstance(value, ast.Attribute)
             and value.attr in TRANSPOSING else "")
    anywhere = any(isinstance(n, ast.Attribute) and n.attr in TRANSPOSING for n in ast.walk(node))
    return whole, anywhere


def statement_at(path: Path, line: int) -> str:
    """The simple statement of ``path`` that holds ``line``, on one line (a call written over three
    lines is shown whole); the line alone when it is not inside one (at most 200 characters)."""
    lines, tree = source_tree(path)
    if not lines or not 0 < line <= len(lines):
        return ""
    best = None
    if tree is not None:
        for node in ast.walk(tree):
            if (isinstance(node, ast.stmt) and not hasattr(node, "body") and node.lineno <= line <= (node.end_lineno or node.lineno)
                    and (best is None or (node.end_lineno - node.lineno) < (best.end_lineno - best.lineno))):
                best = node
    if best is None or best.end_lineno - best.lineno > 6:
        return lines[line - 1].strip()[:200]
    return statement(lines, best.lineno, best.end_lineno)


def statement(lines, first: int, last: int) -> str:
    """The text of a statement over lines ``first`` to ``last``, on one line (at most 200 characters)."""
    return " ".join(line.strip() for line in lines[first - 1:last])[:200]


NUMBER_CALLS = frozenset({"len", "int", "float", "round", "min", "max", "abs", "size", "dim", "numel", "item",
                          "sqrt", "pow", "log", "exp", "floor", "ceil"})  # calls a plain number is made by


def _plain_number(value) -> bool:
    """Whether an assigned expression can only be a number: names, attributes (``x.shape[1]``),
    subscripts, arithmetic and the calls of :data:`NUMBER_CALLS` (``X.size(0)``, ``math.sqrt(d)``)."""
    for node in ast.walk(value):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name not in NUMBER_CALLS:
                return False
        elif isinstance(node, (ast.Lambda, ast.ListComp, ast.GeneratorExp, ast.DictComp, ast.SetComp, ast.List, ast.Tuple)):
            return False
    return True


def made_at(path: Path, line: int, code: str, computed: set, same_method: bool = False) -> dict[str, list[tuple[int, str]]]:
    """What ``code`` (at ``line`` of ``path``) uses besides tensors, and the lines that make it:
    ``self.NAME``, made in another method of the class (``self.NAME = ...``, ``self.NAME[...] =
    ...``, ``register_buffer("NAME", ...)``, and the lines there assigning the locals those use;
    ``same_method``: also earlier in the method holding ``line``, as ``self.mask = self.mask[:n, :n]``
    in forward); and each local name last assigned before ``line`` in the same function, by an
    expression that can only be a number, on a line where no tensor was computed (``computed``:
    the lines of the student's steps)."""
    lines, tree = source_tree(path)
    if tree is None:
        return {}
    names, plain = _names_on(code)
    found: dict[str, list[tuple[int, str]]] = {}
    for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        if not function.lineno <= line <= (function.end_lineno or function.lineno):
            continue
        for name in plain:
            assigned = [n for n in ast.walk(function) if isinstance(n, ast.Assign) and n.lineno < line
                        and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)]
            last = max(assigned, key=lambda n: n.lineno, default=None)
            if (last is not None and _plain_number(last.value)
                    and not set(range(last.lineno, last.end_lineno + 1)) & computed):
                found[name] = [(last.lineno, statement(lines, last.lineno, last.end_lineno))]
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        if not cls.lineno <= line <= (cls.end_lineno or cls.lineno):
            continue
        for method in (n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            inside = method.lineno <= line <= (method.end_lineno or method.lineno)  # the method that uses it: lines before
            if inside and not same_method:
                continue
            for name in names:
                made = [(n, statement(lines, n, end)) for n, end in _making_lines(method, name)
                        if 0 < n <= len(lines) and not (inside and n >= line)]
                if made:
                    found.setdefault(f"self.{name}", []).extend(made)
    return {name: sorted(set(made))[:MAX_LINES] for name, made in found.items()}


def _parsed(code: str):
    """One line (or statement) of code parsed, else None."""
    text = code.strip()
    for attempt in (text, text.removeprefix("return ").strip()):
        try:
            return ast.parse(attempt)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return None


def called_on(code: str) -> set[str]:
    """The attributes ``self.NAME`` that ``code`` calls (``self.W_k(keys)``: a layer)."""
    tree = _parsed(code)
    return {node.func.attr for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "self"} if tree is not None else set()


def _names_on(code: str) -> tuple[list[str], list[str]]:
    """The attributes ``self.NAME`` and the plain names read on one line of code, in order."""
    tree = _parsed(code)
    if tree is None:
        return [], []
    attributes, plain = [], []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
                and isinstance(node.ctx, ast.Load) and node.attr not in attributes):  # read, not assigned
            attributes.append(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id != "self" and node.id not in plain:
            plain.append(node.id)
    return attributes, plain


def _making_lines(method, name: str) -> list[tuple[int, int]]:
    """The statements (first and last line) of ``method`` that make ``self.<name>``, and those
    assigning the locals they use."""
    making, used = [], set()
    for node in ast.walk(method):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        if any(_is_self_attribute(t, name) for t in targets):
            making.append((node.lineno, node.end_lineno or node.lineno))
            used |= {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)} if node.value else set()
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("register_buffer", "register_parameter") and node.args
              and isinstance(node.args[0], ast.Constant) and node.args[0].value == name):
            making.append((node.lineno, node.end_lineno or node.lineno))
            used |= {n.id for a in node.args[1:] for n in ast.walk(a) if isinstance(n, ast.Name)}
    for node in ast.walk(method):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in used for t in node.targets):
            making.append((node.lineno, node.end_lineno or node.lineno))
    return sorted(set(making))


def _is_self_attribute(target, name: str) -> bool:
    """``self.<name>`` or ``self.<name>[...]`` (a tuple of targets: any of them)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_is_self_attribute(t, name) for t in target.elts)
    if isinstance(target, ast.Subscript):
        target = target.value
    return (isinstance(target, ast.Attribute) and target.attr == name and isinstance(target.value, ast.Name)
            and target.value.id == "self")


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


def wrong_join(steps: dict, start: list, reference_steps: list, expected: tuple | None = None) -> Join | None:
    """Walking back from ``start`` (indices of ``steps``: ``{index: [label, shape, where, parents]}``),
    the first join whose shape neither the reference's steps nor ``expected`` (the shape it should
    have: the output's, or what the layer it feeds is given in the reference) have, and whose pieces,
    all of one shape, either the reference joins too, as many, along another dimension, or would fill
    ``expected`` (differing from it along the joined dimension alone) if there were another number of
    them. None when the shapes do not prove it."""
    known = {tuple(s[1].shape) for s in reference_steps if isinstance(s[1], torch.Tensor)}
    if expected is not None:
        known.add(tuple(expected))
    reference_joins = []  # (kind, piece shape, count, dim, shape) of the reference's own joins
    for i, s in enumerate(reference_steps):
        kind = JOINS.get(s[0])
        parts = [p for p in (s[3] if len(s) > 3 else ()) if type(p) is int and 0 <= p < i]
        if kind and parts and isinstance(s[1], torch.Tensor):
            shapes = [tuple(reference_steps[p][1].shape) for p in parts]
            dims = _join_dims(kind, tuple(s[1].shape), shapes)
            if len(set(shapes)) == 1 and len(dims) == 1:
                reference_joins.append((kind, shapes[0], len(parts), dims[0], tuple(s[1].shape)))
    seen, frontier, found = set(), [i for i in start if type(i) is int], []
    while frontier:
        i = frontier.pop()
        if i in seen or i not in steps:
            continue
        seen.add(i)
        frontier.extend(p for p in steps[i][3] if type(p) is int and p < i)
        if JOINS.get(steps[i][0]) and tuple(steps[i][1]) not in known:
            found.append(i)
    for i in sorted(found):
        kind, shape = JOINS[steps[i][0]], tuple(steps[i][1])
        pieces = [p for p in steps[i][3] if type(p) is int and p in steps]
        shapes = [tuple(steps[p][1]) for p in pieces]
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


def reordered(value: torch.Tensor, reference_steps: list) -> tuple | None:
    """For a student's value of the shape of one of the reference's values but other values in it,
    whose numbers in this very order the reference holds under another shape: that other shape and
    the order of its dimensions (``permute(order)``) that gives the reference's value of this shape,
    as ``(other shape, order)``; None unless exactly so."""
    values = KnownValues(reference_steps)
    if not values.misplaced(value):
        return None
    shape, flat = tuple(value.shape), value.detach().double()
    targets = [known for _, known in values.by_size.get(value.numel(), ()) if tuple(known.shape) == shape]
    for _, known in values.by_size.get(value.numel(), ()):
        if tuple(known.shape) == shape or known.dim() > 4 or not same_tensor(flat.reshape(known.shape), known):
            continue
        for order in itertools.permutations(range(known.dim())):
            moved = known.permute(order)
            if tuple(moved.shape) == shape and any(same_tensor(moved, t) for t in targets):
                return tuple(known.shape), order
    return None
