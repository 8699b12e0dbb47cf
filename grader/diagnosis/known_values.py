"""The reference's values, looked up: is a value of the student's one that the reference computes?

The walks of :mod:`grader.diagnosis.origin` ask, step after step, whether a value is one of the
reference's (in another layout, as one part of one, as a softmax written by hand, as a mask
inverted). :class:`KnownValues` answers, built once from the reference's steps and looked up by size.
"""

from __future__ import annotations

import itertools

import torch

from grader.diagnosis.catalog import same_tensor
from grader.diagnosis.tolerance import ATOL
from grader.sandbox.protocol import Step


LAYOUT = frozenset({"transpose", "permute", "t", "view", "reshape", "contiguous", "unsqueeze", "squeeze",
                    "flatten", "unflatten", "expand", "expand_as", "repeat", "movedim", "swapaxes", "mT", "T",
                    "__getitem__", "clone", "to", "float", "double"})


# Steps that take a part of a tensor: a part that is one index of a dimension of a reference value
# (one head) is known, whatever way the student took it.
PARTS = frozenset({"__getitem__", "select", "narrow", "chunk", "split", "unbind", "tensor_split"})


class KnownValues:
    """The values the reference computes (its steps, and its output), looked up by size. Masks and
    lengths (bool and integer steps) are compared as numbers; a boolean mask's complement is known too."""

    def __init__(self, reference_steps: list[Step], extra=()):
        self.steps = reference_steps + softmax_by_hand(reference_steps)
        self.by_size: dict[int, list[tuple[int, torch.Tensor]]] = {}
        self.inverted: list[tuple[int, torch.Tensor]] = []  # the complements of the reference's boolean masks
        self.shapes: set[tuple[tuple, bool]] = set()  # (shape, floating) of each value: numbers, or masks and lengths
        values = [(i, s.value) for i, s in enumerate(self.steps)] + [(-1, t) for t in extra]
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
            if step.label not in ("softmax input", "_softmax input") or i + 1 >= len(self.steps):
                continue
            given, weights = step.value.detach().double(), self.steps[i + 1].value
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
                if bool(((high - low).abs()[rows] <= ATOL).all()):
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
            if self.steps[j].label in LAYOUT:
                frontier.extend(self._parents(j))
        return found

    def _parents(self, i: int) -> list[int]:
        parents = self.steps[i].parents if 0 <= i < len(self.steps) else ()
        return [p for p in parents if type(p) is int and 0 <= p < i]


def softmax_by_hand(steps: list[Step]) -> list[Step]:
    """The steps of each of the reference's softmaxes written out by hand, as a student may: the
    maximum (kept dimension or not), the input minus it, its exponential, their sums along the
    softmax's dimension (kept or not), and the same without the maximum; each with its parents, as
    steps after ``steps`` (a student's own way of computing softmax is then not taken for a mistake)."""
    extra: list[Step] = []

    def add(label: str, value: torch.Tensor, parents: list) -> int:
        """Append a step; its index in ``steps`` followed by ``extra``."""
        extra.append(Step(label, value, ["", 0, 0], parents))
        return len(steps) + len(extra) - 1

    for i, step in enumerate(steps):
        if step.label not in ("softmax input", "_softmax input") or i + 1 >= len(steps):
            continue
        given, weights = step.value.double(), steps[i + 1].value
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
