"""What the sandbox sent about one probe, read and checked before the diagnosis trusts it.

A probe's value crosses the border as plain data: a traced value's recorded steps (``[label, tensor,
[file, line, calling line], parents]``), the numbers a computation without tensors assigned, the shapes
sent with an error as text (read by :func:`grader.sandbox.protocol.parse_shapes`), an error a probe
caught and returned. Everything here reads that data defensively (a step that is not well formed
counts as absent), so that the rest of the diagnosis works on checked, named steps alone
(:class:`grader.sandbox.protocol.Step`). :class:`ProbeRun` is one probe of a module as the plugin
hands it over.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch

from grader.sandbox import trace
from grader.sandbox.protocol import FAILED, Step, checked_parents, checked_where, is_traced, unwrap


@dataclass
class ProbeRun:
    """One probe of a module: what it called, and what the student's code gave."""

    nodeid: str
    probe: str
    kwargs: dict
    # The decoded value (``{"$traced": ..., "steps": ...}`` for traced probes) or, when the
    # student's code raised, ``catalog.failure(type, message)``; None: no result at all.
    student: object
    where: str = ""  # where student code raised, when it did
    failed: bool = False  # the test of this probe did not pass
    checked: str = ""  # what that test checked
    feedback: dict | None = None  # that test's feedback (expected and actual values)
    shapes: str = ""  # when the student's code raised: the shapes of its steps until then (see probing)
    entered: str = ""  # when it raised in another of their files: the line of this module's file that led there
    called: str = ""  # when it raised in a function of this file called from another of its lines: the outermost


def output_of(value):
    """The tensor a traced probe's value stands for (its output; the first of its outputs; else the
    first tensor of the probe's dict, which each probe puts first: ``{"context": ..., "weights": ...}``), else None."""
    value = unwrap(value)
    if isinstance(value, dict):
        named = [value[key] for key in ("out", "output", "result", "outs") if key in value]
        value = named[0] if named else next((v for v in value.values() if isinstance(v, torch.Tensor)), None)
    if isinstance(value, list) and value and isinstance(value[0], torch.Tensor):
        value = value[0]
    return value if isinstance(value, torch.Tensor) else None


def steps_of(value) -> list[Step] | None:
    """The recorded steps of a traced probe's value, else None (checked: the sandbox sent them; a
    step that is not well formed, its label no string among them, counts as absent, and the indices
    of the parents as they were sent, which only :mod:`origin` reads)."""
    if is_traced(value) and isinstance(value.get("steps"), list):
        return [Step(s[0], s[1], checked_where(s[2] if len(s) > 2 else None), checked_parents(s[3] if len(s) > 3 else None))
                for s in value["steps"] if isinstance(s, list) and 2 <= len(s) <= 4 and type(s[0]) is str
                and isinstance(s[1], torch.Tensor)]
    return None


class AssignedNumber(NamedTuple):
    """A Python number a line of a computation without tensors assigned (``trace.Numbers``)."""

    name: str
    value: float
    where: list  # [file, line, 0]


def numbers_with_lines(value) -> list[AssignedNumber]:
    """The Python numbers a traced probe's value carries, with their names and lines (checked: the
    sandbox sent them as ``[name, value, where]``), else []."""
    found = value.get("numbers") if is_traced(value) else None
    if not isinstance(found, list):
        return []
    return [AssignedNumber(n[0], float(n[1]), checked_where(n[2])) for n in found[:400]
            if isinstance(n, list) and len(n) == 3 and isinstance(n[0], str) and n[0].isidentifier()
            and type(n[1]) in (int, float)]


def floating(steps: list[Step]) -> list[Step]:
    """The floating-point steps (the named stages are among them; masks and lengths are not)."""
    return [step for step in steps if step.value.is_floating_point()]


def given_tensors(kwargs) -> tuple:
    """The tensors among a probe's arguments (in lists and dicts too)."""
    found, todo = [], [kwargs]
    while todo and len(found) < 64:
        value = todo.pop()
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, dict):
            todo.extend(value.values())
        elif isinstance(value, (list, tuple)):
            todo.extend(value)
    return tuple(found)


def given_shapes(kwargs) -> tuple:
    """The shapes of the tensors among a probe's arguments."""
    return tuple(tuple(t.shape) for t in given_tensors(kwargs))


def returned_error(value) -> dict | None:
    """An error a probe caught and returned (``{"error": "Type: message (where)"}``)."""
    value = unwrap(value)
    text = value.get("error") if isinstance(value, dict) else None
    if not isinstance(text, str) or not text:
        return None
    kind, _, rest = text.partition(": ")
    where = ""
    if rest.endswith(")") and " (" in rest:
        rest, _, where = rest.rpartition(" (")
        where = where[:-1]
    return {FAILED: kind, "message": rest, "where": where}


def numbers_of(value) -> list[float]:
    """The values of the Python numbers a traced probe's value carries (``"numbers"``), else []."""
    found = value.get("numbers") if is_traced(value) else None
    if not isinstance(found, list):
        return []
    return [float(n[1]) for n in found[:trace.MAX_NUMBERS]
            if isinstance(n, list) and len(n) >= 2 and type(n[1]) in (int, float)]
