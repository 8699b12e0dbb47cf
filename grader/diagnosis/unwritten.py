"""A result whose differing entries all still hold what the tensor started with.

A tensor filled with one number (or copied from what the code was given), then written into: when
every entry that differs from the expected value still holds its start and every other entry is
right, the loop or slice that writes into it leaves those entries unwritten (a bound off by one).
Said with the slices, the line that made the tensor and the loop that writes into it.
"""

from __future__ import annotations

from pathlib import Path

import torch

from grader.diagnosis import catalog
from grader.diagnosis.mechanism import enclosing_loop, loop_indexing
from grader.diagnosis.origin import COPIES, operation_of
from grader.diagnosis.source_text import statement_at
from grader.diagnosis.student_lines import line_at
from grader.diagnosis.tolerance import ATOL
from grader.model import Diagnosis
from grader.sandbox.protocol import Step
from grader.sandbox.trace import OUTSIDE


def unwritten(diagnosis: Diagnosis, stem: str, found, steps: list[Step], output, folder: Path | None,
              given: tuple = ()) -> None:
    """A tensor filled with one number, or copied from what the code was given (``X.clone()``), or
    given and written into as it came (``X[r, n:] = value``), then written into (``context[i] =
    ...``, ``scores[i, j, n:] = -1e6`` in a loop), whose entries that differ from the expected value
    all still hold what the tensor started with, every other entry being the expected one: which
    slices along one dimension (else which entries), the line that made the tensor and the loop that
    writes into it (a bound off by one). Yours is the step shown for the stage, else the output;
    ``given``: the tensors the probe gave, as they were before the student's code ran."""
    yours = found.actual if found.actual is not None else output
    if folder is None or not isinstance(yours, torch.Tensor) or tuple(yours.shape) != tuple(found.expected.shape):
        return
    actual, expected = yours.double(), found.expected.double()
    differs = ~torch.isclose(actual, expected, atol=ATOL, rtol=0, equal_nan=True)
    if not differs.any() or differs.all() or actual.dim() == 0:
        return
    final = next((i for i in range(len(steps) - 1, -1, -1) if steps[i].label == "__setitem__"
                  and tuple(steps[i].value.shape) == tuple(actual.shape) and catalog.same_tensor(steps[i].value, yours)), None)
    if final is None:
        return
    start, outside = _how_it_began(steps, final, actual)
    began_with = _began_with(steps, start, outside, given, actual, differs)
    if began_with is None or not torch.isclose(actual[differs], began_with[differs], atol=1e-6, rtol=0).all():
        return
    where = _left_as_they_were(differs, actual, began_with)
    if where is None:
        return
    what, dim = where
    path = Path(folder) / f"{stem}.py"
    written = steps[final].where[1] if steps[final].where[0] == f"{stem}.py" else 0
    if not written:
        return
    loop = loop_indexing(path, written, dim) if dim is not None else enclosing_loop(path, written)
    if start is not None:
        made, made_code = line_at(steps[start].where, folder, stem)
        if not made:
            return
        code = made_code.split('   (called at')[0]
        held_text = (f"the value {made.split(', ')[-1]} filled the tensor with ({code})"
                     if bool((began_with == began_with.flatten()[0]).all()) else
                     f"what {made.split(', ')[-1]} copied into the tensor ({code})")
    else:
        held_text = "the values your code was given there"
    if loop is not None:
        diagnosis.notes.append(
            f"{what} of yours still hold {held_text}, and every other entry is the expected one: the loop at "
            f"line {loop[0]} ({loop[1]}) writes into it at line {written} and leaves them as they were")
    else:  # not the loop's variable that indexes them (a slice's bound): the line that writes, alone
        diagnosis.notes.append(
            f"{what} of yours still hold {held_text}, and every other entry is the expected one: line "
            f"{written} ({statement_at(path, written)}) writes into it and never into them")


def _how_it_began(steps: list[Step], final: int, actual: torch.Tensor) -> tuple[int | None, bool]:
    """Walking back from the last write (``final``): the step that made the tensor written into (filled
    with one number, or a copy), else None; and whether a write went into what the code was given."""
    seen, frontier, start, outside = set(), [final], None, False
    while frontier:
        i = frontier.pop()
        if i in seen or not 0 <= i < len(steps):
            continue
        seen.add(i)
        parents = [p for p in steps[i].parents if type(p) is int and p < i]
        value = steps[i].value
        if not parents and tuple(value.shape) == tuple(actual.shape) and value.numel() > 1 and (
                bool((value == value.flatten()[0]).all()) or operation_of(steps[i].label) in COPIES):
            start = i
        outside |= steps[i].label == "__setitem__" and not parents and OUTSIDE in steps[i].parents
        frontier.extend(parents)
    return start, outside


def _began_with(steps: list[Step], start: int | None, outside: bool, given: tuple, actual: torch.Tensor,
                differs: torch.Tensor) -> torch.Tensor | None:
    """What the tensor held before it was written into: the step that made it, else (written into as
    it was given) the one tensor of the probe's that its differing entries still hold; else None."""
    began_with = None
    if start is not None:
        began_with = steps[start].value.double()
    elif outside:  # written into as it was given: what it held then is the probe's own tensor
        held = [t.double() for t in given if isinstance(t, torch.Tensor) and t.is_floating_point()
                and tuple(t.shape) == tuple(actual.shape)
                and torch.isclose(actual[differs], t.double()[differs], atol=1e-6, rtol=0).all()]
        began_with = held[0] if len(held) == 1 else None
    return began_with


def _left_as_they_were(differs: torch.Tensor, actual: torch.Tensor, began_with: torch.Tensor):
    """Where the differing entries lie, all holding what the tensor began with: whole slices along
    one dimension (``("Rows [5]", 0)``), else the diagonal of a square matrix, else a few entries
    (``("Entries [0, 0], [1, 1]", None)``); None for more than a few scattered entries."""
    for dim in range(actual.dim()):
        per = differs.movedim(dim, 0).reshape(actual.shape[dim], -1).any(1)
        if bool(per.all()):
            continue
        left = per.nonzero().flatten().tolist()
        if all(torch.isclose(actual.select(dim, k), began_with.select(dim, k), atol=1e-6, rtol=0).all() for k in left):
            return _slices(actual, dim, left), dim
    places = differs.nonzero().tolist()
    if actual.dim() == 2 and actual.shape[0] == actual.shape[1] and places == [[k, k] for k in range(actual.shape[0])]:
        return "The diagonal entries", None
    if len(places) <= 4:
        return "Entries " + ", ".join(str(p) for p in places), None
    return None


def _slices(t: torch.Tensor, dim: int, indices: list[int]) -> str:
    """Slices of ``t`` along ``dim`` by name: "Rows [5]", "Columns [0, 1]", "The entries at index [1] of dimension 0"."""
    if dim == t.dim() - 1 and t.dim() > 1:
        return f"Columns {indices}"
    if dim == t.dim() - 2 or t.dim() == 1:
        return f"Rows {indices}"
    return f"The entries at index {indices} of dimension {dim}"
