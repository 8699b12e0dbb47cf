"""Find the first step of a computation where the student's values leave the reference's.

Both runs are recorded by :mod:`grader.sandbox.trace` on the same inputs: the student's in the
sandbox, the reference's in this process. The reference's steps are named by role
(projections, scores, what softmax receives, weights, weights after dropout, context, merged
heads, output); each is looked for, by value, anywhere among the student's steps, so any
correct way of writing a step is found. The first reference step that the student's steps do
not contain is reported, with both values.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from grader.diagnosis.catalog import same_tensor

MATMULS = ("matmul", "bmm", "mm", "einsum", "__matmul__")
PROJECTIONS = (
    ("queries (the query projection of the input)", ("W_query", "x @ W_query", "W_q")),
    ("keys (the key projection of the input)", ("W_key", "x @ W_key", "W_k")),
    ("values (the value projection of the input)", ("W_value", "x @ W_value", "W_v")),
)
# The labels of the steps that :func:`stages` reads (a reference's other steps may be dropped).
STAGE_LABELS = frozenset({label for _, labels in PROJECTIONS for label in labels} | set(MATMULS) | {
    "softmax input", "_softmax input", "softmax", "_softmax", "dropout", "out_proj input", "W_o input"})
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
    """The first step whose value differs, with the reference's and the student's values."""

    stage: str
    expected: torch.Tensor
    actual: torch.Tensor | None


def stages(steps: list, output) -> list[Stage]:
    """The named steps of a reference run, in the order the computation makes them."""
    found: list[Stage] = []
    for name, labels in PROJECTIONS:
        value = next((t for label, t in steps if label in labels), None)
        if value is not None:
            found.append(Stage(name, value, label=labels[0]))
    softmax_at = next((i for i, (label, _) in enumerate(steps) if label in ("softmax input", "_softmax input")), None)
    if softmax_at is not None:
        given = steps[softmax_at][1]
        n = given.shape[-1]
        scores = next((t for label, t in reversed(steps[:softmax_at]) if label in MATMULS and t.shape[-1] == n), None)
        if scores is not None and scores.shape == given.shape:
            finite = torch.isfinite(given) & (given > -1e4) & (scores.abs() > 1e-6)
            scale = (given[finite] / scores[finite]).median() if finite.any() else torch.tensor(1.0)
            found.append(Stage(SCORES, scores, alternatives=(scores * scale,), label="matmul"))
        found.append(Stage(SOFTMAX_INPUT, given, label="softmax input"))
        weights = steps[softmax_at + 1][1] if softmax_at + 1 < len(steps) else None
        if weights is not None and weights.shape == given.shape:
            found.append(Stage(WEIGHTS, weights, label="softmax"))
            after = steps[softmax_at + 2:]
            dropped = next((t for label, t in after if label == "dropout" and t.shape == weights.shape), None)
            if dropped is not None and not same_tensor(dropped, weights):
                found.append(Stage(DROPPED, dropped, label="dropout"))
            context = next((t for label, t in after if label in MATMULS), None)
            if context is not None:
                found.append(Stage(CONTEXT, context, label="matmul"))
    merged = next((t for label, t in steps if label in ("out_proj input", "W_o input")), None)
    if merged is not None:
        found.append(Stage(MERGED, merged, label="out_proj input"))
    if isinstance(output, torch.Tensor) and output.is_floating_point():
        found.append(Stage(OUTPUT, output))
    return found


def _matches(stage: Stage, value: torch.Tensor) -> bool:
    for candidate in (stage.value, *stage.alternatives):
        if value.numel() == candidate.numel() and same_tensor(value.reshape(candidate.shape), candidate):
            return True
    return False


def first_difference(reference_steps: list, reference_output, student_steps: list, student_output) -> Localization | None:
    """The first reference step that no student step reproduces, or None if all are there."""
    theirs = [t for _, t in student_steps if isinstance(t, torch.Tensor)]
    if isinstance(student_output, torch.Tensor):
        theirs.append(student_output)
    for stage in stages(reference_steps, reference_output):
        if any(_matches(stage, t) for t in theirs):
            continue
        return Localization(stage.name, stage.value, _yours(stage, student_steps, student_output))
    return None


def _yours(stage: Stage, student_steps: list, student_output) -> torch.Tensor | None:
    """The student's step playing this stage's part: same label and shape, else the closest
    value of the same shape."""
    if stage.name == OUTPUT:
        return student_output if isinstance(student_output, torch.Tensor) else None
    same_shape = [(label, t) for label, t in student_steps if isinstance(t, torch.Tensor) and t.shape == stage.value.shape]
    labelled = [t for label, t in same_shape if stage.label and label == stage.label]
    if labelled:
        return labelled[0]
    if not same_shape:
        return None
    expected = stage.value.double().nan_to_num(neginf=-1e4)
    return min((t for _, t in same_shape), key=lambda t: float((t.double().nan_to_num(neginf=-1e4) - expected).abs().max()))
