"""Explain an exception raised by student code: what kind of error, where, and on which line.

PyTorch's messages are precise but terse. :func:`explain` sorts the common ones (a matrix
product of mismatched shapes, ``view`` on a non-contiguous tensor, a mask or index of the
wrong shape, mixed dtypes, not attempted yet), says in a sentence what each means, and shows
the student's own file, line and expression (read from the copy of the submission the
grader took; never imported). A concept is named only where the error and the expression
leave no doubt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from grader.sandbox.protocol import TIMEOUT

_WHERE = re.compile(r"^(?P<file>[\w.-]+\.py), line (?P<line>\d+)")

# (kind, pattern of the message, what it means)
KINDS = (
    ("not attempted", re.compile(r"^$"), "this part still raises NotImplementedError."),
    ("view of a non-contiguous tensor", re.compile(r"view size is not compatible with input tensor's size and stride"),
     "view() needs a tensor laid out contiguously in memory; after transpose() it is not."),
    ("matrix product of mismatched shapes", re.compile(
        r"cannot be multiplied|size mismatch|Expected size for first two dimensions of batch2|batch1 and batch2|"
        r"both arguments to matmul need to be at least|Expected batch2_sizes|must match the size of tensor b.*matmul"),
     "the inner sizes of a matrix product do not match: (.., n, k) @ (.., k, m)."),
    ("mask or index of the wrong shape", re.compile(
        r"shape of the mask|masked_fill|index .* is out of bounds|IndexError|does not match the shape of the indexed tensor"),
     "a boolean mask or an index does not fit the tensor it selects from."),
    ("shapes that do not broadcast", re.compile(r"must match the size of tensor b|cannot be broadcast|expand"),
     "two tensors combined element by element have sizes that neither match nor are 1."),
    ("a tensor backward needs was changed in place", re.compile(r"modified by an inplace operation"),
     "backward() needs a value your forward computed, but something changed that tensor in place afterwards "
     "(a method ending in _, an assignment into it, or a layer built with inplace=True)."),
    ("mixed dtypes", re.compile(r"expected (scalar type|m1 and m2 to have the same dtype)|dtype|Double.*Float|Float.*Double"),
     "two tensors of different dtypes meet in one operation (for instance float64 and float32)."),
)


@dataclass
class Explanation:
    """An exception in student code, explained."""

    kind: str
    meaning: str  # "" when the kind is not one of the common ones
    where: str  # "causal.py, line 42, in forward"
    code: str  # that line of the student's file
    concept: str  # named only when unambiguous, else ""


MATMUL_CODE = re.compile(r"@|\bmatmul\b|\bbmm\b|\bmm\b|\beinsum\b")


def classify(kind: str, message: str, code: str = "") -> tuple[str, str]:
    """``(kind of error, what it means)`` for an exception's type and message (and the line
    that raised it: sizes that do not match in a line with a matrix product are that product's)."""
    if kind == "NotImplementedError" and re.search(r'is missing the required "\w+" function', message):
        return ("a method the module needs is missing",
                "calling a module runs its forward method, and this class defines none under that name.")
    if kind == "NotImplementedError":
        return KINDS[0][0], KINDS[0][2]
    if kind == TIMEOUT:
        return "too slow", "the call did not finish within the time limit (a loop that never ends, or a huge computation)."
    if kind in ("crash", "Crash"):
        return "crash", "the process running your code died (too much memory, or a signal)."
    text = f"{kind}: {message}"
    if MATMUL_CODE.search(code) and re.search(r"must match the size of tensor b|cannot be multiplied|size mismatch", text):
        return KINDS[2][0], KINDS[2][2]
    for name, pattern, meaning in KINDS[1:]:
        if pattern.search(text):
            return name, meaning
    return kind, ""


def source_line(where: str, folder: Path | None) -> str:
    """The text of the line ``where`` points to, in the grader's copy of the submission."""
    match = _WHERE.match(where or "")
    if not match or folder is None:
        return ""
    path = Path(folder) / match["file"]
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    number = int(match["line"])
    return lines[number - 1].strip()[:200] if 0 < number <= len(lines) else ""


def concept_for(kind: str, code: str, message: str = "") -> str:
    """A concept only where the error and the expression say it without doubt."""
    if kind == KINDS[-2][0] and re.search(r"output 0 of (_?Safe)?SoftmaxBackward", message):
        return ("The output of softmax (the attention weights) is changed in place after softmax made it, and backward "
                "needs it unchanged: apply dropout or masking to it out of place (no inplace=True, no method ending in _).")
    if kind == "view of a non-contiguous tensor":
        return "Call .contiguous() before .view(...) after a transpose (or use .reshape(...), which copies when needed)."
    if kind == "matrix product of mismatched shapes" and re.search(r"\.T\b", code):
        return ("On a batch of matrices, .T reverses all dimensions (it is meant for 2-D tensors): "
                "transpose only the last two with .transpose(-2, -1).")
    return ""


def explain(kind: str, message: str, where: str, folder: Path | None) -> Explanation:
    """Explain one exception (type ``kind``, ``message``, raised at ``where``)."""
    code = source_line(where, folder)
    name, meaning = classify(kind, message, code)
    return Explanation(name, meaning, where, code, concept_for(name, code, message))
