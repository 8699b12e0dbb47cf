"""The named stages of an attention computation, found in a reference run.

The reference's recorded steps are named by role (projections, scores, what softmax receives,
weights, weights after dropout, context, merged heads, output): :func:`stages` finds them, and
:class:`Localization` is what :mod:`grader.diagnosis.localize` reports of the first one that the
student's steps do not hold.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from grader.diagnosis.catalog import same_tensor
from grader.sandbox.protocol import Step


MATMULS = ("matmul", "bmm", "mm", "einsum", "__matmul__")


PROJECTIONS = (
    ("queries (the query projection of the input)", ("W_query", "x @ W_query", "W_q")),
    ("keys (the key projection of the input)", ("W_key", "x @ W_key", "W_k")),
    ("values (the value projection of the input)", ("W_value", "x @ W_value", "W_v")),
)


SCORES = "attention scores (queries times keys transposed)"


SOFTMAX_INPUT = "scaled and masked scores (what softmax receives)"


WEIGHTS = "attention weights (the softmax output)"


DROPPED = "attention weights after dropout"


CONTEXT = "context vectors (attention weights times values)"


MERGED = "heads merged back (what the output projection receives)"


OUTPUT = "output"


@dataclass
class Stage:
    """One named step of the reference computation."""

    name: str
    value: torch.Tensor
    # Other values that are equally right for this step (scores scaled before masking).
    alternatives: tuple = ()
    # The student's step with this label is shown as "yours" when it differs.
    label: str = ""


@dataclass
class Localization:
    """The first step whose value differs, with the reference's and the student's values, and
    the index of the student's step that computed "yours" (None: no step of theirs plays it)."""

    stage: str
    expected: torch.Tensor
    actual: torch.Tensor | None
    step: int | None = None
    # What the reference's steps around this one are (for relations: a step missing or repeated).
    before: torch.Tensor | None = None
    after: torch.Tensor | None = None
    softmax_input: torch.Tensor | None = None
    # "Yours" is a step of the same kind as this one (same label, or both matrix products):
    # only then may it be said to be a step missing or applied twice.
    same_kind: bool = True
    # How the student computes the stages one part at a time (each head: ``(dim, 0)`` or ``(0, stride)``,
    # :func:`_ways_of_parts`), when "expected" is one part of the stage's value (:func:`_part_differing`).
    parts_along: tuple[int, int] | None = None
    # "expected" is a part that no step of the student's computes (:func:`_part_never_computed`):
    # ``step`` is then the student's last step computing another part.
    missing_part: bool = False
    # The student's steps that hold an earlier stage's value (indices as ``step``): right values,
    # so nothing they were computed from is where the value goes wrong.
    matched: tuple = ()


def stages(steps: list[Step], output) -> list[Stage]:
    """The named steps of a reference run, in the order the computation makes them."""
    found: list[Stage] = []
    for name, labels in PROJECTIONS:
        value = next((step.value for step in steps if step.label in labels), None)
        if value is not None:
            found.append(Stage(name, value, label=labels[0]))
    softmax_at = next((i for i, step in enumerate(steps) if step.label in ("softmax input", "_softmax input")), None)
    if softmax_at is not None:
        given = steps[softmax_at].value
        n = given.shape[-1]
        scores = next((step.value for step in reversed(steps[:softmax_at])
                       if step.label in MATMULS and step.value.shape[-1] == n), None)
        if scores is not None and scores.shape == given.shape:
            finite = torch.isfinite(given) & (given > -1e4) & (scores.abs() > 1e-6)
            scale = (given[finite] / scores[finite]).median() if finite.any() else torch.tensor(1.0)
            found.append(Stage(SCORES, scores, alternatives=(scores * scale,), label="matmul"))
        found.append(Stage(SOFTMAX_INPUT, given, label="softmax input"))
        weights = steps[softmax_at + 1].value if softmax_at + 1 < len(steps) else None
        if weights is not None and weights.shape == given.shape:
            found.append(Stage(WEIGHTS, weights, label="softmax"))
            after = steps[softmax_at + 2:]
            dropped = next((step.value for step in after if step.label == "dropout" and step.value.shape == weights.shape),
                           None)
            if dropped is not None and not same_tensor(dropped, weights):
                found.append(Stage(DROPPED, dropped, label="dropout"))
            context = next((step.value for step in after if step.label in MATMULS), None)
            if context is not None:
                found.append(Stage(CONTEXT, context, label="matmul"))
    merged = next((step.value for step in steps if step.label in ("out_proj input", "W_o input")), None)
    if merged is not None:
        found.append(Stage(MERGED, merged, label="out_proj input"))
    if isinstance(output, torch.Tensor) and output.is_floating_point():
        found.append(Stage(OUTPUT, output))
    return found
