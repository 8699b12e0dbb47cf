"""What a test's end means for the student: the ``grading`` entry of each test in the JSON
report (status, message, feedback), and the one-line account of a probe that went wrong.

``GradingPlugin`` (:mod:`grader.suite.plugin`) calls these; they hold the wording a student reads.
A test fails (a check did not hold), errs in student code (what it raised, where, or a
timeout or crash), or errs in the grader (a suite mistake or a bug, never the student's
fault, reported to the instructor as a grader error).
"""

from __future__ import annotations

import re
import traceback
from dataclasses import asdict

import pytest

from grader.suite.comparisons import Mismatch, StudentCodeFailed
from grader.model import NOT_ATTEMPTED, Feedback
from grader.sandbox.client import ProbeOutcome
from grader.sandbox.protocol import CRASH, TIMEOUT, ErrorAccount


def grading_entry(nodeid: str, excinfo, outcome: ProbeOutcome | None) -> dict:
    """The ``grading`` entry (status, message, feedback) of a test phase that raised ``excinfo``;
    ``outcome`` is the test's probe outcome, if it had one."""
    exc = excinfo.value
    if isinstance(exc, StudentCodeFailed):
        return {"status": exc.status, "message": exc.message, "feedback": {"hint": exc.hint} if exc.hint else None}
    if isinstance(exc, Mismatch):
        return {"status": "failed", "message": exc.message, "feedback": asdict(exc.feedback)}
    if isinstance(exc, AssertionError):
        return {"status": "failed", "message": str(exc).splitlines()[0] if str(exc) else "check failed", "feedback": None}
    if excinfo.errisinstance((pytest.skip.Exception, pytest.xfail.Exception)):
        return {"status": "failed", "message": "skipped: a skipped check earns no points", "feedback": None}
    if (shape := empty_tensor(outcome)) is not None:
        # A degenerate but legal answer the check could not even look at: a failed check, not the grader's fault.
        return {"status": "failed", "feedback": None,
                "message": f"your result holds an empty tensor (shape {shape}), which this check cannot use"}
    detail = str(exc) if isinstance(exc, SuiteMistake) else "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return {
        "status": "error",
        "message": "the grader could not run this check (not your fault; please tell your instructor)",
        "feedback": None,
        "grader_error": f"{nodeid}: {detail}",
    }


def unusable(exc: BaseException) -> Mismatch:
    """The student's failed check for a value of theirs the check could not use (it raised on it)."""
    detail = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()
    text = detail[-1][:300] if detail else type(exc).__name__
    return Mismatch(f"your result could not be used: {text}",
                    Feedback(checked="what your code returned", actual=text))


class SuiteMistake(Exception):
    """A probe marker or a probe itself is wrong: the grader's error, never the student's."""


def probe_bug(stem: str, probe: str, error: ErrorAccount) -> str:
    """The grader error for a probe whose own code raised."""
    where = f" (at {error.where})" if error.where else ""
    return f"probe {probe!r} of probes/{stem}.py failed in its own code{where}: {error.type or 'error'}: {error.message}"


def empty_tensor(outcome: ProbeOutcome | None) -> tuple | None:
    """The shape of the first tensor without elements in a probe's value, if there is one."""
    import torch

    pending = [outcome.value] if outcome is not None and outcome.outcome == "ok" else []
    while pending:
        value = pending.pop()
        if isinstance(value, torch.Tensor) and value.numel() == 0:
            return tuple(value.shape)
        if isinstance(value, (list, tuple)):
            pending += value
        elif isinstance(value, dict):
            pending += value.values()
    return None


def student_failure(stem: str, outcome: ProbeOutcome, check: str = "") -> StudentCodeFailed:
    """Say what went wrong in student code, in one line, and whether it was a timeout (naming
    ``check``, the test that was running, when given)."""
    error = outcome.error
    kind, message, where = error.type, error.message, error.where
    at = f" ({where})" if where else ""
    if outcome.outcome == "timeout":
        if check:
            message = message.replace("this check", f"the check {check}", 1)
        return StudentCodeFailed(f"{stem}.py: {message}", status="timeout",
                                 hint="Look for a loop that never ends, or a very large computation.")
    if error.not_attempted:
        return StudentCodeFailed(f"{NOT_ATTEMPTED}: {stem}.py still raises NotImplementedError{at}", status="error")
    if outcome.outcome == "module_error":
        if kind in ("SyntaxError", "IndentationError", "TabError"):  # its location once: "(causal.py, line 5)" ends both
            line = re.search(r", line (\d+)", where)
            return StudentCodeFailed(f"{stem}.py has a {kind}{f' at line {line.group(1)}' if line else at}: "
                                     f"{re.sub(r' [(][^()]*, line [0-9]+[)]$', '', message)}", status="error")
        if kind in (TIMEOUT, CRASH):
            return StudentCodeFailed(f"{stem}.py could not be imported: {message}", status="error")
        return StudentCodeFailed(f"{stem}.py could not be imported: {kind}: {message}{at}", status="error")
    if outcome.outcome == "crash":
        return StudentCodeFailed(f"{message}", status="error")
    if error.probe_error:
        return StudentCodeFailed(message, status="error")
    if error.grader_fault:  # the probe raised, but not on the reference: on what the student's code gave
        return StudentCodeFailed(f"the check could not use what your code gave ({kind}: {message})", status="error")
    return StudentCodeFailed(f"your code raised {kind}: {message}{at}", status="error")


# Largest student file the grader compiles (never runs) to show where its syntax error is.
SYNTAX_SOURCE_BYTES = 1 << 20


def syntax_error_diagnosis(path, kind: str):
    """A module that does not compile: its error once, where, and the line with a caret under
    the place Python points at (``Diagnosis.code``: the line, then the caret line). The file is
    compiled here, never run; None when it cannot be read or compiles after all."""
    from grader.model import Diagnosis

    try:
        if path.is_symlink() or path.stat().st_size > SYNTAX_SOURCE_BYTES:
            return None
        source = path.read_bytes()
        compile(source, path.name, "exec", dont_inherit=True)
        return None
    except SyntaxError as exc:
        found = exc
    except (OSError, ValueError, RecursionError, MemoryError):
        return None
    where = f"{path.name}, line {found.lineno}" if found.lineno else path.name
    text = (found.text or "").rstrip("\r\n").expandtabs(4)
    code = text.strip()
    if code and found.offset and 0 < found.offset <= len(text) + 1:
        caret = found.offset - 1 - (len(text) - len(text.lstrip()))
        code += "\n" + " " * max(caret, 0) + "^"
    return Diagnosis(error=f"{kind}: {found.msg}", where=where, code=code)
