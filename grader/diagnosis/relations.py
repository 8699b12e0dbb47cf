"""What is different at the first differing step, said only when it holds exactly.

Given the reference's value of a step and the student's, :func:`relation` tests relations that
hold within the comparison's tolerance or not at all: a constant factor (and which number:
2, √8, 1/√2 ...), transposed, the dimensions in another order, rows, columns or heads in another order, masked entries holding
another value, the step missing or applied twice (yours equals the reference's step before or
after it, or softmax of the expected weights), normalised over another dimension. Nothing here
guesses: a relation that does not hold on every entry is not stated (and the diagnosis states it
only when it holds on every probe).
"""

from __future__ import annotations

import itertools
import math

import torch

from grader.diagnosis.catalog import MASKED, same_tensor
from grader.diagnosis.tolerance import ATOL


def relation(place, yours: torch.Tensor) -> str:
    """The first relation that holds exactly between ``place.expected`` and ``yours``, else ""."""
    expected = place.expected
    if not (isinstance(yours, torch.Tensor) and yours.is_floating_point() and expected.is_floating_point()):
        return ""
    if yours.shape == expected.shape and same_tensor(yours, expected):
        return ""
    for test in (_missing_or_repeated, _masked_value, _factor, _transposed, _dimensions_reordered, _permuted, _other_axis):
        found = test(place, expected, yours)
        if found:
            return found
    return ""


def _masked(t: torch.Tensor) -> torch.Tensor:
    return t.double() <= MASKED


def _missing_or_repeated(place, expected, yours) -> str:
    if not getattr(place, "same_kind", True):  # another kind of step: nothing is missing or repeated
        return ""
    if place.before is not None and _same(yours, place.before):
        return "yours equals the reference's step before this one: this step is missing"
    if place.after is not None and _same(yours, place.after):
        return "yours already equals the reference's next step: a step is applied too early or twice"
    if is_weights(expected) and _same(yours, torch.softmax(expected.double(), dim=-1)):
        return "yours is the softmax of the expected weights: softmax is applied twice"
    return ""


def _masked_value(place, expected, yours) -> str:
    if yours.shape != expected.shape:
        return ""
    hidden = _masked(expected)
    if not hidden.any() or hidden.all():
        return ""
    e, y = expected.double(), yours.double()
    if not torch.isclose(y[~hidden], e[~hidden], atol=ATOL, rtol=0, equal_nan=True).all():
        return ""
    if bool(_masked(yours)[hidden].all()):
        return ""
    values = y[hidden]
    held = f" {_number(float(values[0]))}" if bool((values == values[0]).all()) else " other values"
    theirs = e[hidden]
    masked = _number(float(theirs[0])) if bool((theirs == theirs[0]).all()) else "a large negative value"
    return (f"yours equals the expected value except where the reference's entries are masked ({masked}): "
            f"yours hold{held} there")


def _factor(place, expected, yours) -> str:
    c = factor_of(expected, yours)
    if c is None:
        return ""
    return f"every value of yours is the expected one times {_number(c)}{_named(c)}: a constant factor"


def factor_of(expected: torch.Tensor, yours: torch.Tensor) -> float | None:
    """The number ``c`` with ``yours == c * expected`` on every entry (masked entries masked in both),
    else None (also for c = 1)."""
    if not isinstance(yours, torch.Tensor) or yours.shape != expected.shape:
        return None
    e, y = expected.double(), yours.double()
    hidden = _masked(e)
    if not torch.equal(hidden, _masked(y)):
        return None
    e, y = e[~hidden], y[~hidden]
    if not (torch.isfinite(e).all() and torch.isfinite(y).all()):
        return None
    usable = e.abs() > 1e-3
    if usable.sum() < 2:
        return None
    ratios = y[usable] / e[usable]
    c = float(ratios.median().detach())
    if not math.isfinite(c) or abs(c) < 1e-6 or abs(c - 1) < 1e-3:
        return None
    if not torch.isclose(y, c * e, atol=ATOL * max(1.0, abs(c)), rtol=1e-4).all():
        return None
    return c


def size_factor(factors: list[float], sizes: list[dict[str, int]]) -> str:
    """Which sizes a factor found on several checks is made of: ``factors[r]`` is the factor on
    check ``r`` and ``sizes[r]`` the sizes of that check's tensors by name ("the last dimension of the
    keys"). Said only when the factor changes from check to check (a constant is no size) and equals
    ``(A / B) ** p`` (p = 1/2 or 1), or ``A ** q`` (q = ±1/2 or ±1), on every check for one size or pair alone (sizes equal on every
    check count as one, named by the first of their names); else ""."""
    if len(factors) < 2 or len(factors) != len(sizes):
        return ""
    if all(abs(c - factors[0]) <= 1e-3 * abs(factors[0]) for c in factors):
        return ""
    groups: dict[tuple, list[str]] = {}
    for name in sizes[0]:
        if all(name in s for s in sizes):
            groups.setdefault(tuple(s[name] for s in sizes), []).append(name)
    fits = [(a, b, p) for a, b in itertools.permutations(groups, 2) for p in (0.5, 1.0)
            if all(y and abs((x / y) ** p - c) <= 1e-3 * abs(c) for x, y, c in zip(a, b, factors))]
    fits += [(a, None, q) for a in groups for q in (0.5, 1.0, -0.5, -1.0)
             if all(x and abs(x ** q - c) <= 1e-3 * abs(c) for x, c in zip(a, factors))]
    if len(fits) != 1:
        return ""
    a, b, p = fits[0]

    def name(vector) -> str:
        names = groups[vector]
        other = next((n for n in names if n.split(" of the ")[0] != names[0].split(" of the ")[0]), "")
        return f"{names[0]} (= {other})" if other else names[0]

    if b is None:
        root = "√" if abs(p) == 0.5 else ""
        how = "times" if p > 0 else "divided by"
        more, less = ("product", "division") if p > 0 else ("division", "product")
        return (f"on every check that differs here, yours is the expected value {how} {root}A, with A = {name(a)}: "
                f"a {more} by {root}A too many, or a {less} by {root}A missing")
    root = "√" if p == 0.5 else ""
    return (f"on every check that differs here, yours is the expected value times {root}A / {root}B, with A = "
            f"{name(a)} and B = {name(b)}: a division by {root}B where {root}A is meant (or a product by {root}A "
            f"where {root}B is)")


def _named(c: float) -> str:
    """`` (= √8)`` or `` (= 1/√2)`` for a factor that is a square root or the inverse of one, else ""."""
    sign = "-" if c < 0 else ""
    for inverse in (False, True):
        v = 1 / abs(c) if inverse else abs(c)
        k = round(v * v)
        if 2 <= k <= 4096 and abs(math.sqrt(k) - v) <= 1e-3 * v:
            r = math.isqrt(k)
            if r * r == k and not inverse:
                return ""  # a whole number, shown as it is
            root = str(r) if r * r == k else f"√{k}"
            return f" (= {sign}{'1/' if inverse else ''}{root})"
    return ""


def _transposed(place, expected, yours) -> str:
    if expected.dim() < 2 or expected.shape[-1] == 1 or expected.shape[-2] == 1:
        return ""
    flipped = expected.transpose(-2, -1)
    if yours.shape == flipped.shape and _same(yours, flipped) and not _same(flipped, expected):
        return "yours is the expected value transposed (its last two dimensions swapped)"
    return ""


def _dimensions_reordered(place, expected, yours) -> str:
    """Yours holds the expected values with its dimensions in another order (time first, not batch first)."""
    if yours.dim() != expected.dim() or yours.dim() < 3 or yours.shape == expected.shape or yours.dim() > 5:
        return ""
    for order in itertools.permutations(range(yours.dim())):
        if list(order) != list(range(yours.dim())) and tuple(yours.permute(order).shape) == tuple(expected.shape) \
                and _same(yours.permute(order), expected):
            return f"yours holds the expected values with its dimensions in another order: yours.permute{tuple(order)} is the expected"
    return ""


def _permuted(place, expected, yours) -> str:
    if yours.shape != expected.shape:
        return ""
    for dim in range(expected.dim()):
        size = expected.shape[dim]
        if size < 2:
            continue
        mine, theirs = yours.unbind(dim), expected.unbind(dim)
        order = []
        for piece in mine:
            match = next((j for j, other in enumerate(theirs) if j not in order and same_tensor(piece, other)), None)
            if match is None:
                break
            order.append(match)
        if len(order) == size and order != list(range(size)):
            return f"yours holds the expected {_along(expected, dim)} in another order ({order})"
    return ""


def _along(t: torch.Tensor, dim: int) -> str:
    if dim == t.dim() - 1:
        return "columns"
    if dim == t.dim() - 2:
        return "rows"
    if t.dim() == 4 and dim == 1:
        return "heads"
    return f"entries along dimension {dim}"


def _other_axis(place, expected, yours) -> str:
    given = place.softmax_input
    if given is None or not is_weights(expected) or given.shape != yours.shape:
        return ""
    for dim in range(given.dim() - 1):
        if given.shape[dim] > 1 and _same(yours, torch.softmax(given.double(), dim=dim)):
            return (f"yours is normalised over dimension {dim} instead of the last: softmax(..., dim={dim}) "
                    "makes columns sum to 1, not rows")
    return ""


def is_weights(t: torch.Tensor) -> bool:
    """Values in [0, 1] in a matrix or more (attention weights: what softmax gives)."""
    return t.dim() >= 2 and bool(torch.isfinite(t).all()) and bool(((t >= 0) & (t <= 1 + 1e-6)).all())


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and same_tensor(a, b)


def _number(x: float) -> str:
    return f"{x:.4g}"
