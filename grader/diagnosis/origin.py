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

Which values are known: :mod:`grader.diagnosis.known_values`; the same walk over shapes, for an
error: :mod:`grader.diagnosis.wrong_shapes`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch

from grader.diagnosis.catalog import same_tensor
from grader.diagnosis.known_values import LAYOUT, PARTS, KnownValues
from grader.diagnosis.reductions import whole_reduction
from grader.sandbox.protocol import Step
from grader.sandbox.trace import OUTSIDE


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


def value_origin(steps: list[Step], start: int, reference_steps: list[Step], extra=(),
                 parts: tuple[int, int] | None = None, proven=()) -> Origin | None:
    """Where the value at ``steps[start]`` first went wrong (see the module docstring). ``parts``: the
    student computes the reference's steps one part at a time, this way (a loop over heads, see
    :func:`grader.diagnosis.localize.first_difference`), so any step of theirs that is one part of a
    value the reference computes is as right as that value, whatever operation made it. ``proven``:
    steps holding a stage's value (the masked exponentials of a softmax written by hand): nothing
    they were computed from, by whatever way of the student's, is where the value goes wrong."""
    values = KnownValues(reference_steps, extra)

    def parents_of(i: int) -> list:
        return [p for p in steps[i].parents if type(p) is not int or p < i]

    behind = _behind(proven, steps, parents_of)  # the proven steps and what they were computed from
    constant, starts, copies = _not_judged(steps, parents_of)

    def known(i: int) -> bool:
        if not 0 <= i < len(steps) or constant.get(i) or i in behind:
            return True
        if steps[i].label.split("[")[0] == "unbind":  # a row of a loop over a tensor (for item in X): as right as X
            return all(known(p) for p in parents_of(i) if type(p) is int)
        if whole_reduction(steps, i):  # one number from a whole tensor: judged like any value
            return bool(values.matching(steps[i].value))
        if steps[i].label in LAYOUT and values.misplaced(steps[i].value):
            return False
        if values.holds(steps[i].value, layout=steps[i].label in LAYOUT):
            return True
        if steps[i].label == "exp" and values.exp_of_scores(steps[i].value):  # another correct softmax
            return True
        if parts is not None and values.holds_part(steps[i].value, stride=parts[1]):
            return True
        return steps[i].label.split("[")[0] in PARTS and values.holds_part(steps[i].value)

    root = first_unknown([start], parents_of, known)
    if root is None:
        return None
    inputs = sorted({p for p in parents_of(root) if type(p) is int and p not in starts
                     and not (p in copies and not values.matching(steps[p].value, exact=True))})
    matched = [values.matching(steps[p].value, exact=True) for p in inputs if steps[p].value.numel() > 1]
    same = all(matched) and (not matched or any(_combines(values, q, matched) for q in range(len(reference_steps))))
    if same:
        return Origin(root, True, [], attributes=any(type(p) is str and p != OUTSIDE for p in parents_of(root)),
                      inverted=tuple(p for p in inputs if values.only_inverted(steps[p].value)))
    return Origin(root, False, _inputs_shown(steps, inputs, matched, values, parents_of), inputs_known=all(matched))


def _behind(proven, steps: list[Step], parents_of) -> set[int]:
    """The steps ``proven`` and every step they were computed from."""
    behind: set[int] = set()
    frontier = [i for i in proven if 0 <= i < len(steps)]
    while frontier:
        i = frontier.pop()
        if i not in behind:
            behind.add(i)
            frontier.extend(p for p in parents_of(i) if type(p) is int and 0 <= p < len(steps))
    return behind


def _not_judged(steps: list[Step], parents_of) -> tuple[dict[int, bool], set[int], set[int]]:
    """The steps not judged by value (``constant``), and among them the tensors made only to be
    written into (``starts``) and the copies of what the code was given (``copies``).

    Masks and positions built from nothing the student computed (aranges, ones, their comparisons):
    a student may build them otherwise than the reference and be right, so they are not judged
    by value; what they are used in is."""
    constant: dict[int, bool] = {}
    starts: set[int] = set()  # tensors made only to be written into: never listed as what a line is computed from
    copies: set[int] = set()  # copies of what the code was given: listed only where the reference holds them so
    for i, step in enumerate(steps):
        constant[i] = not step.value.is_floating_point() and all(type(p) is int and constant.get(p, False) for p in parents_of(i))
        # A tensor filled with one number from nothing or from another's shape alone (torch.zeros,
        # zeros_like, then expanded or cloned, to write rows into), or memory left uninitialised
        # (torch.empty, empty_like): a way of starting, not a value to judge; what is written into it is.
        operation = operation_of(step.label.split("[")[0])
        uniform = step.value.numel() > 1 and bool((step.value == step.value.flatten()[0]).all())
        from_starts = all(type(p) is int and p in starts for p in parents_of(i))  # expand, clone of one
        if ((uniform and (not parents_of(i) or operation in FOR_SHAPE or (operation in LAYOUT and from_starts)))
                or operation in UNINITIALISED):
            constant[i] = True
            starts.add(i)
        elif operation in COPIES and parents_of(i) and all(p == OUTSIDE for p in parents_of(i)):
            constant[i] = True  # a copy of what the code was given (X.clone()): as right as what it was given
            copies.add(i)
    return constant, starts, copies


def _inputs_shown(steps: list[Step], inputs: list[int], matched: list, values: KnownValues, parents_of) -> list[int]:
    """What the origin was computed from, and the layout steps those came through (a permute before
    a view); a part (one head) of a reference value is not shown: the reference holds it too."""
    inputs = [p for p in inputs if not (steps[p].label.split("[")[0] in PARTS and values.holds_part(steps[p].value))
              and not (steps[p].label == "exp" and not values.holds(steps[p].value) and values.exp_of_scores(steps[p].value))]
    if not all(matched):  # said: "some of what it is computed from is not what the reference computes": those
        inputs = [p for p in inputs if not values.matching(steps[p].value, exact=True)] or inputs
    shown, frontier = [], list(reversed(inputs))
    while frontier and len(shown) < 8:
        i = frontier.pop()
        if i not in shown:
            shown.append(i)
            if steps[i].label in LAYOUT and not values.matching(steps[i].value, exact=True):
                # Through a reshape or permute to what it came from, unless that is exactly a value of
                # the reference's: then this layout step is where the value leaves the reference's
                # shape or order, and the line that made the value it reshapes is right.
                frontier.extend(p for p in parents_of(i) if type(p) is int
                                and not values.matching(steps[p].value, exact=True))
    return shown


# Operations that, applied twice, give another value than once (by their names after operation_of).
REPEATABLE = frozenset({"div", "mul", "softmax", "exp", "tanh", "sigmoid", "sqrt"})


def operation_of(label: str) -> str:
    """A step's operation by one name, whatever form the code used (``/``, ``/=``, ``div_``: div)."""
    return {"__truediv__": "div", "__itruediv__": "div", "div_": "div", "__mul__": "mul", "__imul__": "mul",
            "mul_": "mul", "_softmax": "softmax"}.get(label, label)


def applied_twice(steps: list[Step], root: int, reference_steps: list[Step]) -> int | None:
    """The input of ``steps[root]`` that already holds exactly the result of the reference's own step
    of the same operation (a division by the scale, a softmax), where ``root`` applies that operation
    once more: the operation is applied twice. That input's index, else None."""
    operation = operation_of(steps[root].label)
    if operation not in REPEATABLE:
        return None
    values = KnownValues(reference_steps)

    def changes(q: int) -> bool:  # the reference's step is that operation and changes what it is given (not / 1)
        if not (0 <= q < len(reference_steps) and operation_of(reference_steps[q].label) == operation):
            return False
        given = [r for r in reference_steps[q].parents if type(r) is int and 0 <= r < q]
        return bool(given) and all(not (tuple(reference_steps[r].value.shape) == tuple(reference_steps[q].value.shape)
                                        and same_tensor(reference_steps[r].value, reference_steps[q].value)) for r in given)

    for p in (p for p in steps[root].parents if type(p) is int and p < root):
        if steps[p].value.numel() > 1 and any(changes(q) for q in values.matching(steps[p].value, exact=True)):
            return p
    return None


def discarded(steps: list[Step], root: int, reference_steps: list[Step], output=None) -> list[int]:
    """The student's steps computed before ``root`` (where a walk stopped) from a value ``root``
    reads too (the same step, or one holding the same value), that nothing of theirs uses afterwards (no later step is computed from them, and they
    are not the output), while each holds exactly a value the reference computes and goes on with (a
    later step of the reference is computed from it): a result computed and dropped
    (``scores.masked_fill(...)`` with nothing to keep what it returns), where the reference keeps it."""
    values = KnownValues(reference_steps)

    def parents_of(i: int) -> set[int]:
        return {p for p in steps[i].parents if type(p) is int and 0 <= p < i}

    # A layer's output is kept twice, by the call inside it and by the layer's hook (``dropout`` of
    # nn.Dropout, at the same line, from that call alone): the hook's record is the same result.
    alias = {k: next(iter(parents_of(k))) for k in range(len(steps)) if len(parents_of(k)) == 1
             and steps[k].where == steps[next(iter(parents_of(k)))].where
             and tuple(steps[k].value.shape) == tuple(steps[next(iter(parents_of(k)))].value.shape)
             and same_tensor(steps[k].value, steps[next(iter(parents_of(k)))].value)}
    used = {p for k in range(len(steps)) for p in parents_of(k) if alias.get(k) != p}
    used |= {alias[k] for k in alias if k in used}
    read = [steps[p].value for p in parents_of(root)]

    def reads_the_same(j: int) -> bool:  # computed from a value that ``root`` reads (the step itself, or its equal)
        return any(tuple(steps[q].value.shape) == tuple(value.shape) and same_tensor(steps[q].value, value)
                   for q in parents_of(j) for value in read)

    used_by_reference = set().union(*(values.feeds(q) for q in range(len(values.steps)))) if values.steps else set()
    found = []
    for j in range(root):
        value = steps[j].value
        if (j in used or j in alias or not value.is_floating_point() or value.numel() <= 1 or steps[j].label in LAYOUT
                or not reads_the_same(j)):
            continue
        if isinstance(output, torch.Tensor) and tuple(output.shape) == tuple(value.shape) and same_tensor(output, value):
            continue
        kept = any(k in used and tuple(steps[k].value.shape) == tuple(value.shape) and same_tensor(steps[k].value, value)
                   for k in range(len(steps)) if k != j)  # the same value computed again, and used: nothing is lost
        if not kept and any(q in used_by_reference for q in values.matching(value, exact=True)):
            found.append(j)
    return found


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
            value = values.steps[i].value
            if not any(t.shape == value.shape and same_tensor(t.double(), value.double()) for t in taken):
                if assign(k + 1, taken + [value]):
                    return True
        return False

    return assign(0, [])


def reordered(value: torch.Tensor, reference_steps: list[Step]) -> tuple | None:
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
