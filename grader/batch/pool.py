"""A pool of trusted grading processes: torch and pytest are imported once, the suite is
collected once (:mod:`grader.batch.class_session`), then each submission is graded in a forked copy
of that collected session, ``jobs`` at a time, all sharing one sandbox zygote. Used by
``batch`` (:mod:`grader.batch.command`)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
from pathlib import Path
from typing import Callable, Iterator

from grader.assignment import Assignment
from grader.model import Report
from grader.sandbox import linux
from grader.sandbox.client import Sandbox
from grader.settings import Settings


def grade_many(
    roots: list[Path],
    assignment: Assignment,
    settings: Settings,
    *,
    jobs: int = 2,
    known: frozenset[str] | Callable[[Path], frozenset[str]] = frozenset(),
    extra_flags: Callable[[Path], list[str]] | None = None,
    ready: Callable[[set[str]], None] | None = None,
) -> Iterator[tuple[Path, Report]]:
    """Yield ``(root, report)`` for every submission folder, in the order they finish.

    ``known`` (relative paths that are part of the template, not flagged) may be a function
    of the submission folder; ``extra_flags(root)`` adds flags. Both run in the submission's
    grading process. A submission whose grading process dies still gets a report (score 0,
    a grader error). ``ready(isolation)`` is called once the sandbox has proved it works, with
    how it confines student code (``confine.NAMESPACES`` or the weaker modes), before any
    student's code runs: it may raise to grade nobody.

    The sandbox runs one submission's workers at a time (``zygote.turn``: no two students' code
    ever runs at once), so a submission's modules run up to ``jobs`` at a time instead, as far as
    the phases of their references allow (``schedule.phases``); the trusted work of the other grading processes
    (taking a submission, the checks, the report) goes on meanwhile.
    """
    settings = dataclasses.replace(settings, workers=max(settings.workers, jobs))
    with Sandbox(many=len(roots) > 1) as sandbox:
        from grader import environment

        environment.verify(sandbox, settings)  # once per batch, before any fork: a broken environment grades nobody
        if ready is not None:
            ready(set(sandbox.isolation))
        _warm_imports()
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # collects the suite once, then forks a grading process per submission
            os.close(read_end)
            _collect_and_grade(write_end, roots, assignment, settings, sandbox, jobs=jobs, known=known,
                               extra_flags=extra_flags)
        os.close(write_end)
        yield from _reports_from(read_end, pid, roots, assignment.rubric)


def _collect_and_grade(write_end: int, roots: list[Path], assignment: Assignment, settings: Settings, sandbox: Sandbox,
                       **options) -> None:
    """The collecting process: grade ``roots`` (:func:`grader.batch.class_session.grade_class`),
    writing each report to ``write_end``; it exits, never returns."""
    linux.die_with_parent()
    os.nice(TRUSTED_NICENESS)  # inherited by every grading process
    code = 0
    try:
        from grader.batch.class_session import grade_class

        with os.fdopen(write_end, "wb") as out:
            grade_class(roots, assignment, settings, sandbox, out, **options)
    except BaseException:  # noqa: BLE001 - every submission not reported gets a failure (_reports_from)
        code = 1
    finally:
        os._exit(code)


def _reports_from(read_end: int, pid: int, roots: list[Path], rubric) -> Iterator[tuple[Path, Report]]:
    """Each report the collecting process ``pid`` sends on ``read_end``, as it comes; a failure for
    every submission it sent no report of (it died, or the batch stopped early and killed it)."""
    left = dict(enumerate(roots))
    try:
        with os.fdopen(read_end, "rb") as lines:
            for line in lines:
                index, _, data = line.partition(b" ")
                root = left.pop(int(index))
                try:
                    report = Report.from_dict(json.loads(data))
                except (ValueError, KeyError, TypeError):
                    report = failed(rubric)
                yield root, report
    finally:
        if left:  # stopped early (an interrupt) or the collector died: nothing more is graded
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)  # its grading processes die with it
        os.waitpid(pid, 0)
    for root in left.values():  # the collecting process died before these
        yield root, failed(rubric)


# The sandbox's turn (one student's code at a time) is a batch's critical path: the trusted processes
# (collecting, checking, diagnosing, reporting) give way to it and do their work in the time the
# sandbox leaves, instead of slowing every turn on a machine with few cores. (Under sched_autogroup, on
# by default in Ubuntu's kernels, nice orders processes within their session only: there each worker,
# in a session of its own from setsid, has a CPU share of its own beside the trusted side's.)
TRUSTED_NICENESS = 10


def failed(rubric) -> Report:
    """The report of a submission whose grading process failed: score 0, a grader error."""
    from grader.grade import build_report
    from grader.submission import Taken

    report = build_report(rubric, None, Taken(), {})
    report.grader_errors.append("the grading process for this submission failed")
    return report


def _warm_imports() -> None:
    """Import what every grading process needs once, before forking."""
    import pytest  # noqa: F401
    import pytest_jsonreport.plugin  # noqa: F401
    import pytest_timeout  # noqa: F401
    import torch  # noqa: F401

    import grader.suite.comparisons  # noqa: F401
    import grader.suite.plugin  # noqa: F401
