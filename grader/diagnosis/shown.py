"""How a tensor is shown to a student: a short text of its first rows, or a small matrix as a grid."""

from __future__ import annotations

import torch

from grader.diagnosis.tolerance import ATOL


def fmt(value, rows: int = 3) -> str:
    """A short text of a tensor: its shape and its first rows, 4 decimals."""
    if not isinstance(value, torch.Tensor):
        return repr(value)[:200]
    t = value.detach()
    if t.numel() == 0:  # a legal answer (wrong, surely): it must fail a check, not the grader
        return f"shape {tuple(t.shape)}: empty"
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


def as_grid(t: torch.Tensor) -> list | None:
    """A small 2-D matrix as nested lists (the last two dims of the first item), else None."""
    while t.dim() > 2:
        t = t[0]
    if t.dim() != 2 or t.shape[0] > 16 or t.shape[1] > 16:
        return None
    return [[round(float(x), 4) for x in row] for row in t.float()]


def fmt_pair(expected: torch.Tensor, actual: torch.Tensor, rows: int = 3) -> tuple[str, str]:
    """Both tensors as :func:`fmt` texts, from the first row where they differ (so that the rows
    shown are never the same), when both have the same shape."""
    e, a = expected.detach(), actual.detach()
    if e.shape != a.shape or e.dim() < 2 or not (e.is_floating_point() and a.is_floating_point()):
        return fmt(e, rows), fmt(a, rows)
    flat_e, flat_a = e.reshape(-1, e.shape[-1]).double(), a.reshape(-1, a.shape[-1]).double()
    differs = ~torch.isclose(flat_a, flat_e, atol=ATOL, rtol=0, equal_nan=True).all(dim=-1)
    first = int(differs.nonzero()[0]) if differs.any() else 0
    if first < rows:
        return fmt(e, rows), fmt(a, rows)

    def text(flat, t):
        head = flat[first:first + rows]
        lines = ["[" + ", ".join(_num(x) for x in row[:8].tolist()) + (", …" if row.numel() > 8 else "") + "]"
                 for row in head]
        return f"shape {tuple(t.shape)}, from row {first}: " + " ".join(lines)

    return text(flat_e, e), text(flat_a, a)
