"""Whose fault an exception that left a probe is: the student's, or the probe's own bug.

An exception is the student's when it went through the student's module (a frame of theirs is
in its traceback), when it left a block run under :func:`student_code`, or when it is a
:class:`ProbeError` (the probe's message for a result that cannot be graded). Anything else is a
bug of the probe: the grader reports it as a grader error, never as the student's.
:mod:`grader.sandbox.probing` offers these to probe authors; the sandbox's worker describes with them
what it sends back.
"""

from __future__ import annotations

import contextlib
import os
import traceback
from pathlib import Path

STUDENT_FAULT = "_grader_student_fault"  # set on an exception that left student code


class ProbeError(Exception):
    """Raised by a probe when student code gave something that cannot be graded; its message is
    shown to the student."""


@contextlib.contextmanager
def student_code():
    """Run student code: an exception that leaves this block is the student's, not the probe's."""
    try:
        yield
    except BaseException as exc:
        with contextlib.suppress(Exception):
            setattr(exc, STUDENT_FAULT, True)
        raise


def is_students(exc: BaseException, student_dir: str) -> bool:
    """Whether ``exc`` is the student's (see the module docstring) and not a bug of the probe."""
    if isinstance(exc, (ProbeError, SyntaxError)):
        return True
    try:
        if getattr(exc, STUDENT_FAULT, False):
            return True
    except Exception:  # noqa: BLE001 - an exception of the student's own making
        return True
    folder = os.path.join(os.path.abspath(student_dir), "")
    return any(os.path.abspath(frame.f_code.co_filename).startswith(folder)
               for frame, _ in traceback.walk_tb(exc.__traceback__))


def describe_exception(exc: BaseException, student_dir: str) -> dict:
    """An account of an exception that left a probe: the student's (short, readable, with the
    line of their code) or the probe's own (``grader_fault``, with the probe's line)."""
    frames = traceback.extract_tb(exc.__traceback__)
    students = is_students(exc, student_dir)
    folder = os.path.join(os.path.abspath(student_dir), "")
    mine = [f for f in frames if os.path.abspath(f.filename).startswith(folder)]
    where = f"{os.path.basename(mine[-1].filename)}, line {mine[-1].lineno}, in {mine[-1].name}" if mine else ""
    if isinstance(exc, SyntaxError) and exc.filename:
        where = f"{os.path.basename(exc.filename)}, line {exc.lineno}"
    # Raised in another of the student's files than the one the probe called into: where that one was left.
    entered = ""
    if mine and os.path.basename(mine[0].filename) != os.path.basename(mine[-1].filename):
        entered = f"{os.path.basename(mine[0].filename)}, line {mine[0].lineno}, in {mine[0].name}"
    message = f"your code called sys.exit({exc.code!r})" if isinstance(exc, SystemExit) else str(exc)[:500]
    account = {
        "type": type(exc).__name__,
        "message": message,
        "where": where,
        # Raised by their own code (a stub's raise): not attempted. Raised inside torch (nn.Module's
        # placeholder for a forward the class does not define: a misspelled name) is an error like any other.
        "not_attempted": (isinstance(exc, NotImplementedError) and students
                          and bool(frames) and os.path.abspath(frames[-1].filename).startswith(folder)),
        "probe_error": isinstance(exc, ProbeError),
    }
    if entered:
        account["entered"] = entered
    # Raised in a function of the file that another line of that same file called (a constructor
    # given a wrong argument by the factory the probe called): the outermost of those lines.
    same = [f for f in mine if os.path.basename(f.filename) == os.path.basename(mine[-1].filename)] if mine else []
    if len(same) > 1 and (same[0].lineno, same[0].name) != (same[-1].lineno, same[-1].name):
        account["called_from"] = f"{os.path.basename(same[0].filename)}, line {same[0].lineno}, in {same[0].name}"
    if not students:
        last = frames[-1] if frames else None
        account["grader_fault"] = True
        shown = "/".join(Path(last.filename).parts[-2:]) if last else ""  # probes/<stem>.py
        account["where"] = f"{shown}, line {last.lineno}, in {last.name}" if last else ""
    return account


def explain(exc: BaseException, student) -> str:
    """``Type: message (file, line N, in f)`` for an exception of ``student``'s code."""
    info = describe_exception(exc, os.path.dirname(getattr(student, "__file__", "") or "") or os.sep)
    where = f" ({info['where']})" if info["where"] else ""
    return f"{info['type']}: {info['message']}{where}"


def caught(function, *args, **kwargs):
    """``(function(*args, **kwargs), None)``, or ``(None, exception)`` when student code raised
    one that a test judges. Not attempted yet (NotImplementedError) and ProbeError still raise."""
    try:
        with student_code():
            return function(*args, **kwargs), None
    except (ProbeError, NotImplementedError):
        raise
    except Exception as exc:  # noqa: BLE001 - which error it is, is what the test looks at
        return None, exc
