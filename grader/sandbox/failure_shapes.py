"""The shapes of a recorded computation that raised, carried on its exception as text.

When student code raises inside :func:`grader.sandbox.probing.recorded`, the shapes of the steps
the failing call was computed from are noted on the exception (:data:`SHAPES`); the worker sends
them with the error (:func:`shapes_of_failure`) and the diagnosis reads where the shapes left the
reference's. Apart from the probing API because probes never call these: only the recording
block that writes the text and the worker that reads it back do.
"""

from __future__ import annotations

from grader.sandbox import protocol
from grader.sandbox.protocol import ShapeStep, Step


SHAPES = "_grader_step_shapes"  # set on an exception that left a recorded block: its steps' shapes


def shapes_text(steps: list, raised_from=(), limit: int = 3990) -> str:
    """The steps the call that raised was computed from (``raised_from`` and their ancestors; all
    steps when it is unknown), each with its index, label, shape, line (and calling line) and parents:
    ``"!<4,W_o 4:view|6x2@mha.py:30/0<3 3:matmul|6x6@mha.py:29/0<"`` (``s``: a scalar; the first token,
    ``!``, lists what the call that raised received: steps, and the module's attributes), latest
    first, as many as fit in ``limit`` characters (``client.MAX_SHAPES``; :func:`protocol.shapes_text`)."""
    steps = [Step(*step) for step in steps]
    wanted = {p for p in raised_from if type(p) is int}
    ancestors, frontier = set(), list(wanted)
    while frontier:
        i = frontier.pop()
        if i in ancestors or not 0 <= i < len(steps):
            continue
        ancestors.add(i)
        frontier.extend(p for p in steps[i].parents if type(p) is int)
    chosen = sorted(ancestors, reverse=True) if ancestors else list(range(len(steps) - 1, -1, -1))
    received = sorted(wanted) + sorted(p for p in raised_from if type(p) is str and p.isidentifier())
    shapes = {i: ShapeStep(str(steps[i].label)[:40], list(steps[i].value.shape), steps[i].where,
                           [p for p in steps[i].parents if type(p) is int]) for i in chosen}
    return protocol.shapes_text(shapes, received, limit)


def shapes_of_failure(exc: BaseException) -> str:
    """The shapes :func:`grader.sandbox.probing.recorded` noted on an exception, else ""."""
    try:
        text = exc.__dict__.get(SHAPES, "")
    except Exception:  # noqa: BLE001 - an exception of the student's making
        return ""
    return text if type(text) is str else ""
