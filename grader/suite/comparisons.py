"""Comparisons for hidden tests, with feedback a student can act on.

Tests call these in the trusted process on values decoded from the sandbox. A failed check
raises :class:`Mismatch`, whose feedback (what was checked, expected, actual, for attention
weights both matrices as grids, and for checks of structure what was observed) goes into the
report. Concepts are named by the module's diagnosis, never guessed here.
"""

from __future__ import annotations

import torch

from grader.diagnosis.shown import as_grid, fmt
from grader.diagnosis.tolerance import ATOL
from grader.model import Feedback

class Mismatch(AssertionError):
    """A check failed; ``feedback`` says why."""

    def __init__(self, message: str, feedback: Feedback):
        super().__init__(message)
        self.message = message
        self.feedback = feedback


class StudentCodeFailed(Exception):
    """Student code raised, hung, crashed or could not be imported (no value to check)."""

    def __init__(self, message: str, status: str = "failed", hint: str = ""):
        super().__init__(message)
        self.message = message
        self.status = status
        self.hint = hint


def close(actual, expected: torch.Tensor, *, what: str, atol: float = ATOL, grid: bool = False) -> None:
    """Check that ``actual`` is a tensor of ``expected``'s shape, finite, within ``atol``.

    ``what`` names the check for the student; ``grid`` keeps both matrices (attention weights).
    No concept is guessed here: the module's diagnosis (``grader.diagnosis.diagnose``) names one only
    when the catalog confirms it.
    """
    expected = expected.detach()

    def mismatch(message: str) -> Mismatch:  # the feedback is written only for a check that fails
        feedback = Feedback(checked=what, expected=fmt(expected))
        if not isinstance(actual, torch.Tensor):
            feedback.actual = f"a {type(actual).__name__}"
            return Mismatch(message, feedback)
        feedback.actual = fmt(actual)
        if grid:
            feedback.expected_grid, feedback.actual_grid = as_grid(expected), as_grid(actual)
        return Mismatch(message, feedback)

    if not isinstance(actual, torch.Tensor):
        raise mismatch(f"{what}: expected a tensor, got a {type(actual).__name__}")
    if tuple(actual.shape) != tuple(expected.shape):
        raise mismatch(f"{what}: expected shape {tuple(expected.shape)}, got {tuple(actual.shape)}")
    if not actual.is_floating_point() and expected.is_floating_point():
        raise mismatch(f"{what}: expected a float tensor, got {actual.dtype}")
    a, e = actual.double(), expected.double()
    nonfinite = ~torch.isfinite(a) & torch.isfinite(e)
    if nonfinite.any():
        where = tuple(nonfinite.nonzero()[0].tolist())
        raise mismatch(f"{what}: your result has NaN or inf (first at {list(where)})")
    bad = ~torch.isclose(a, e, atol=atol, rtol=0, equal_nan=True)
    if not bad.any():
        return
    count, total = int(bad.sum()), bad.numel()
    first = tuple(bad.nonzero()[0].tolist())
    raise mismatch(f"{what}: {count} of {total} values differ by more than {atol:g}; first at {list(first)}: "
                   f"expected {e[first].item():.4f}, got {a[first].item():.4f}")


def visibly_wrong_weights(weights: torch.Tensor, causal: bool) -> bool:
    """Whether attention weights are wrong on their face: rows that do not sum to 1, weight on
    future tokens (``causal``), or a zero diagonal (a token that cannot see itself)."""
    w = weights.detach().double()
    if w.numel() == 0 or w.dim() == 0:
        return ""
    n = w.shape[-1]
    if w.dim() >= 2 and w.shape[-2] == n and causal:
        future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
        if (w[..., future].abs() > 1e-6).any() or (n > 1 and (w.diagonal(dim1=-2, dim2=-1).abs() < 1e-9).any()):
            return True
    sums = w.sum(dim=-1)
    return not torch.allclose(sums, torch.ones_like(sums), atol=ATOL)


def require(condition: bool, message: str, *, what: str, hint: str = "", expected: str = "", actual: str = "",
            proven: bool = False) -> None:
    """Fail with feedback unless ``condition`` holds (for checks that are not tensor comparisons).

    ``hint`` says what was observed and how to fix it (the mask is a plain attribute, ...);
    never a guess from a value. ``proven``: the condition is an exact relation that names the
    concept by itself, so the hint stays beside the module's diagnosis.
    """
    if not condition:
        raise Mismatch(message, Feedback(checked=what, hint=hint, expected=expected, actual=actual, proven=proven))


def graph_cut(gradients, expected: dict, missing) -> bool:
    """Whether a missing gradient is confirmed to come from a cut graph: every other parameter
    got the reference's gradient (the module computes the reference's function, only no gradient
    flows to ``missing``). A module that computes something else (returns its weights, uses
    another matrix) misses gradients for that reason, and a hint about ``.detach()`` would mislead."""
    others = [name for name in expected if name not in missing]
    if not isinstance(gradients, dict) or not others:
        return False
    for name in others:
        grad = gradients.get(name)
        if not (isinstance(grad, torch.Tensor) and grad.shape == expected[name].shape
                and torch.allclose(grad.double(), expected[name].double(), atol=1e-5, rtol=1e-4)):
            return False
    return True
