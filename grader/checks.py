"""Comparisons for hidden tests, with feedback a student can act on.

Tests call these in the trusted process on values decoded from the sandbox. A failed check
raises :class:`Mismatch`, whose feedback (what was checked, expected, actual, a hint, and
for attention weights both matrices as grids) goes into the report.
"""

from __future__ import annotations

from typing import Callable, Mapping

import torch

from grader.model import Feedback

# A known mistake, as the hint that names it and what the reference computes when making it.
Variants = Mapping[str, "torch.Tensor | Callable[[], torch.Tensor]"]


class Mismatch(AssertionError):
    """A check failed; ``feedback`` says why."""

    def __init__(self, message: str, feedback: Feedback, *, observed: bool = False):
        super().__init__(message)
        self.message = message
        self.feedback = feedback
        # The hint states what was observed (a structure, a missing buffer), not a guess from a value.
        self.observed = observed


class StudentCodeFailed(Exception):
    """Student code raised, hung, crashed or could not be imported (no value to check)."""

    def __init__(self, message: str, status: str = "failed", hint: str = ""):
        super().__init__(message)
        self.message = message
        self.status = status
        self.hint = hint


def fmt(value, rows: int = 3) -> str:
    """A short text of a tensor: its shape and its first rows, 4 decimals."""
    if not isinstance(value, torch.Tensor):
        return repr(value)[:200]
    t = value.detach()
    if t.dim() == 0:
        return f"{t.item():.4f}"
    head = t.reshape(-1, t.shape[-1])[:rows] if t.dim() > 1 else t[None, :8]
    lines = ["[" + ", ".join(_num(x) for x in row[:8].tolist()) + (", …" if row.numel() > 8 else "") + "]" for row in head]
    more = " …" if t.dim() > 1 and t.reshape(-1, t.shape[-1]).shape[0] > rows else ""
    return f"shape {tuple(t.shape)}: " + " ".join(lines) + more


def _num(x) -> str:
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, float):
        return f"{x:.4f}"
    return str(x)


def _grid(t: torch.Tensor) -> list | None:
    """A small 2-D matrix as nested lists (the last two dims of the first item), else None."""
    while t.dim() > 2:
        t = t[0]
    if t.dim() != 2 or t.shape[0] > 16 or t.shape[1] > 16:
        return None
    return [[round(float(x), 4) for x in row] for row in t.float()]


def _resolve(candidate):
    try:
        return candidate() if callable(candidate) else candidate
    except Exception:  # noqa: BLE001 - a variant that cannot be computed names nothing
        return None


def diagnose(actual: torch.Tensor, variants: Variants, atol: float) -> str:
    """The hint of the first known mistake whose result ``actual`` matches, else ""."""
    for hint, candidate in variants.items():
        value = _resolve(candidate)
        if (
            isinstance(value, torch.Tensor)
            and value.shape == actual.shape
            and torch.allclose(actual.double(), value.double(), atol=atol, rtol=0)
        ):
            return hint
    return ""


def close(
    actual,
    expected: torch.Tensor,
    *,
    what: str,
    atol: float = 1e-4,
    hint: str = "",
    variants: Variants | None = None,
    grid: bool = False,
) -> None:
    """Check that ``actual`` is a tensor of ``expected``'s shape, finite, within ``atol``.

    ``what`` names the check for the student; ``variants`` map hints to the values that known
    mistakes produce (first match wins); ``hint`` is used when no variant matches; ``grid``
    asks for both matrices drawn side by side (attention weights).
    """
    expected = expected.detach()
    feedback = Feedback(checked=what, expected=fmt(expected))
    if not isinstance(actual, torch.Tensor):
        feedback.actual = f"a {type(actual).__name__}"
        raise Mismatch(f"{what}: expected a tensor, got a {type(actual).__name__}", feedback)
    feedback.actual = fmt(actual)
    if grid:
        feedback.expected_grid, feedback.actual_grid = _grid(expected), _grid(actual)
    if tuple(actual.shape) != tuple(expected.shape):
        feedback.hint = hint_for_shape(actual, expected) or hint
        raise Mismatch(
            f"{what}: expected shape {tuple(expected.shape)}, got {tuple(actual.shape)}", feedback
        )
    if not actual.is_floating_point() and expected.is_floating_point():
        feedback.hint = "Return floating-point values (torch.float32), as the textbook does."
        raise Mismatch(f"{what}: expected a float tensor, got {actual.dtype}", feedback)
    a, e = actual.double(), expected.double()
    nonfinite = ~torch.isfinite(a) & torch.isfinite(e)
    if nonfinite.any():
        where = tuple(nonfinite.nonzero()[0].tolist())
        feedback.hint = hint or "NaN or inf usually comes from a softmax over a row that is all -inf, or dividing by zero."
        raise Mismatch(f"{what}: your result has NaN or inf (first at {list(where)})", feedback)
    bad = ~torch.isclose(a, e, atol=atol, rtol=0, equal_nan=True)
    if not bad.any():
        return
    count, total = int(bad.sum()), bad.numel()
    first = tuple(bad.nonzero()[0].tolist())
    feedback.hint = diagnose(actual, variants or {}, atol) or hint
    raise Mismatch(
        f"{what}: {count} of {total} values differ by more than {atol:g}; first at {list(first)}: "
        f"expected {e[first].item():.4f}, got {a[first].item():.4f}",
        feedback,
    )


def hint_for_shape(actual: torch.Tensor, expected: torch.Tensor) -> str:
    """Name the usual reason for a wrong shape."""
    if actual.dim() == expected.dim() and sorted(actual.shape) == sorted(expected.shape):
        return "The dimensions are in the wrong order: check your transpose / view."
    if actual.dim() == expected.dim() - 1:
        return "A dimension is missing: did you drop the batch dimension, or sum over a dimension?"
    if actual.dim() == expected.dim() + 1:
        return "There is an extra dimension: check your view / unsqueeze."
    return ""


def attention_weight_hints(weights: torch.Tensor, causal: bool) -> str:
    """Name what is wrong with an attention-weight matrix by looking at it alone."""
    w = weights.detach().double()
    n = w.shape[-1]
    if w.dim() >= 2 and w.shape[-2] == n and causal:
        future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
        if (w[..., future].abs() > 1e-6).any():
            return "Tokens attend to future tokens: the causal mask is missing (or not applied to these scores)."
        if n > 1 and (w.diagonal(dim1=-2, dim2=-1).abs() < 1e-9).any():
            return "The diagonal is masked too: a token must attend to itself (use diagonal=1 for the mask)."
    sums = w.sum(dim=-1)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
        if w.dim() >= 2 and torch.allclose(w.sum(dim=-2), torch.ones_like(sums), atol=1e-4):
            return "The columns sum to 1, not the rows: apply softmax over the last dimension (dim=-1)."
        return "The rows do not sum to 1: normalise each row (softmax over dim=-1)."
    return ""


def require(condition: bool, message: str, *, what: str, hint: str = "", expected: str = "", actual: str = "") -> None:
    """Fail with feedback unless ``condition`` holds (for checks that are not tensor comparisons)."""
    if not condition:
        raise Mismatch(message, Feedback(checked=what, hint=hint, expected=expected, actual=actual), observed=True)
