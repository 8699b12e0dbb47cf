"""What every writer says the same way: a module's diagnosis in words, and attention grids.

Grids are drawn with Unicode block shades and the value in every cell, so they read the same
in a 16-colour terminal, an uncoloured Actions log and GitHub's Markdown: an exact 0 is a dot,
any weight above 0 gets at least the lightest shade, and 0.14 never looks like 0.00.
"""

from __future__ import annotations

import math

from grader.model import Diagnosis

# Shades from light to dark, for (0, 0.25], (0.25, 0.5], (0.5, 0.75], (0.75, 1].
SHADES = "░▒▓█"
MAX_CELLS = 16  # rows and columns drawn at most


def level(value) -> int:
    """-1 for an exact 0 (or masked), else 0..3: which shade a weight in [0, 1] gets."""
    if not isinstance(value, (int, float)) or math.isnan(value) or value <= 0:
        return -1
    return min(3, int(min(value, 1.0) * 4 - 1e-9))


def cell(value) -> str:
    """One cell: a shade and the value with two decimals (6 characters)."""
    if not isinstance(value, (int, float)):
        return f"{str(value)[:5]:>6}"
    if math.isnan(value):
        return "   nan"
    if value in (float("inf"), float("-inf")):
        return "  -inf" if value < 0 else "   inf"
    if value == 0:
        return "   ·  "
    mark = SHADES[level(value)] if 0 < value <= 1 else " "
    text = f"{value:.2f}" if abs(value) < 10 else f"{value:.0f}"
    if 0 < value < 0.005:
        text = "<.01"
    return f"{mark}{text:>5}"


def grid_rows(grid: list) -> list[str]:
    """A matrix as lines of shaded cells (at most :data:`MAX_CELLS` square)."""
    rows = []
    for row in grid[:MAX_CELLS]:
        values = row if isinstance(row, list) else [row]
        rows.append("".join(cell(v) for v in values[:MAX_CELLS]))
    return rows


def side_by_side(left: list, right: list | None, titles=("expected", "yours")) -> list[str]:
    """Two grids next to each other, with their titles."""
    a, b = grid_rows(left), grid_rows(right) if right else []
    width = max((len(r) for r in a), default=8)
    lines = [f"{titles[0]:<{width}}   {titles[1] if b else ''}".rstrip()]
    for i in range(max(len(a), len(b))):
        lines.append(f"{a[i] if i < len(a) else '':<{width}}   {b[i] if i < len(b) else ''}".rstrip())
    return lines


def diagnosis_line(diagnosis: Diagnosis | None) -> str:
    """The diagnosis in one line (for a reporter message)."""
    if diagnosis is None:
        return ""
    parts = list(diagnosis.concepts)
    if diagnosis.error:
        parts.append(f"{error_words(diagnosis)} At {diagnosis.where}: {code_line(diagnosis)}" if diagnosis.where
                     else error_words(diagnosis))
        if diagnosis.origin:
            parts.append(f"{origin_words(diagnosis)} {diagnosis.origin}: {diagnosis.origin_code}")
    elif diagnosis.stage and not diagnosis.concepts:
        parts.append(f"First difference from the reference: the {diagnosis.stage}"
                     + (f", at {diagnosis.where}: {diagnosis.code}" if diagnosis.where and diagnosis.code else "") + ".")
        if diagnosis.origin:
            parts.append(f"{origin_words(diagnosis)} {diagnosis.origin}: {diagnosis.origin_code}")
        if diagnosis.relation:
            parts.append(f"What differs: {diagnosis.relation}.")
    if diagnosis.inputs:
        parts.append(f"{inputs_words(diagnosis)} " + "; ".join(diagnosis.inputs) + ".")
    parts += [f"It uses {name}, made at {lines[0]}." if len(lines) == 1 else
              f"It uses {name}; these lines of yours make it, or what it is made from: {'; '.join(lines)}."
              for name, lines in made_by_name(diagnosis.made)]
    parts += [f"In your code: {note}." for note in diagnosis.notes]
    return " ".join(parts)


def inputs_words(diagnosis: Diagnosis) -> str:
    """How the lines that made the origin line's inputs are introduced."""
    if diagnosis.origin_kind == "combination":
        return ("Each value it is computed from is one the reference computes too (the steps inside its softmax "
                "included), but the reference never combines them so; they are made at:")
    return ("Some of what it is computed from is not what the reference computes, or only in another shape or order; "
            "it is made at:")


def origin_words(diagnosis: Diagnosis) -> str:
    """How the origin line is introduced: where a wrong shape, or a value the reference never has, is made."""
    if diagnosis.origin_kind == "value":
        return "First line of yours whose result the reference never computes (the tensors it is computed from match the reference's):"
    if diagnosis.origin_kind in ("combination", "inputs", "uses"):
        return "First line of yours whose result the reference never computes:"
    if diagnosis.origin_kind == "call":
        return "It was raised in a call from your line"
    return "The wrong shape is made first at"


def made_by_name(made: list[str]) -> list[tuple[str, list[str]]]:
    """``["self.P: line 69: code", "self.P: line 73: code"]`` as ``[("self.P", ["line 69: code", "line 73: code"])]``."""
    grouped: dict[str, list[str]] = {}
    for line in made:
        name, _, rest = line.partition(": ")
        grouped.setdefault(name, []).append(rest or line)
    return list(grouped.items())


PROBE_ERROR = "ProbeError: "  # how the diagnosis's error reads when a check refused what the code gave


def error_words(diagnosis: Diagnosis) -> str:
    """The diagnosis's error in words: a check that refused what the code gave (a ProbeError) is not
    an error the student's code raised, and is not said as one."""
    if diagnosis.error.startswith(PROBE_ERROR):
        return f"A check cannot use what your code gives: {diagnosis.error.removeprefix(PROBE_ERROR)}"
    return diagnosis.error


def lead(diagnosis: Diagnosis) -> list[str]:
    """The diagnosis as lines of words (no values): the concepts, else what first differs."""
    lines = [f"Mistake found: {concept}" for concept in diagnosis.concepts]
    if diagnosis.error.startswith(PROBE_ERROR):  # a check's own words on what the code gave: nothing raised
        lines.append(error_words(diagnosis))
    elif diagnosis.error:
        lines.append(f"Your code raised an error: {diagnosis.error}")
        if diagnosis.where:
            if caret_line(diagnosis):  # the line and the caret follow as a block (code_block)
                lines.append(f"At {diagnosis.where}:")
            else:
                lines.append(f"At {diagnosis.where}: {diagnosis.code}" if diagnosis.code else f"At {diagnosis.where}")
    if diagnosis.origin and diagnosis.origin_kind in ("shape", "call"):
        lines.append(f"{origin_words(diagnosis)} {diagnosis.origin}" + (f": {diagnosis.origin_code}" if diagnosis.origin_code else ""))
    if diagnosis.stage:
        first = "First step that differs" if not diagnosis.concepts else "Where it shows first"
        lines.append(f"{first}: the {diagnosis.stage}" + (f", in: {diagnosis.checked}" if diagnosis.checked else ""))
        if diagnosis.where and not diagnosis.error:
            lines.append(f"Your line that computes it: {diagnosis.where}" + (f": {diagnosis.code}" if diagnosis.code else ""))
        if diagnosis.origin and diagnosis.origin_kind != "shape":
            lines.append(f"{origin_words(diagnosis)} {diagnosis.origin}"
                         + (f": {diagnosis.origin_code}" if diagnosis.origin_code else ""))
        if diagnosis.relation:
            lines.append(f"What differs: {diagnosis.relation}")
    if diagnosis.inputs:
        lines.append(inputs_words(diagnosis))
        lines += [f"  {line}" for line in diagnosis.inputs]
    for name, made in made_by_name(diagnosis.made):
        if len(made) == 1:
            lines.append(f"It uses {name}, made at {made[0]}")
        else:
            lines.append(f"It uses {name}; these lines of yours make it, or what it is made from:")
            lines += [f"  {line}" for line in made]
    lines += [f"In your code: {note}" for note in diagnosis.notes]
    return lines


def code_line(diagnosis: Diagnosis) -> str:
    """The student's line the diagnosis shows, without a caret line."""
    return diagnosis.code.split("\n")[0]


def caret_line(diagnosis: Diagnosis) -> str:
    """The caret under :func:`code_line` (a syntax error), or ""."""
    lines = diagnosis.code.split("\n")
    return lines[1] if len(lines) == 2 and lines[1].strip() == "^" else ""


def code_block(diagnosis: Diagnosis) -> list[str]:
    """A syntax error's line and the caret under it, indented, to show after :func:`lead` (else [])."""
    if not (diagnosis.error and diagnosis.where and caret_line(diagnosis)):
        return []
    return [f"    {code_line(diagnosis)}", f"    {caret_line(diagnosis)}"]


def one_reason(exercise) -> str:
    """The reason every failing check of ``exercise`` shares, when its message says it for the whole
    module (a syntax error, a missing file, a crash on import; not "not attempted yet"), else ""."""
    failing = [t for t in exercise.tests if t.status != "passed"]
    if (not failing or not exercise.message or exercise.not_attempted
            or any(t.message != exercise.message for t in failing)):
        return ""
    return exercise.message
