"""A pool of trusted grading processes: torch and pytest are imported once, then each
submission is graded in a forked copy of this process, ``jobs`` at a time, all sharing one
sandbox zygote. Used by ``batch`` (:mod:`grader.batch`).
"""

from __future__ import annotations

import json
import os
import select
from pathlib import Path
from typing import Callable, Iterator

from grader.model import Report
from grader.sandbox import linux
from grader.sandbox.client import Sandbox
from grader.settings import Settings


def grade_many(
    roots: list[Path],
    assignment: str,
    settings: Settings,
    *,
    jobs: int = 2,
    known: frozenset[str] | Callable[[Path], frozenset[str]] = frozenset(),
    extra_flags: Callable[[Path], list[str]] | None = None,
) -> Iterator[tuple[Path, Report]]:
    """Yield ``(root, report)`` for every submission folder, in the order they finish.

    ``known`` (relative paths that are part of the template, not flagged) may be a function
    of the submission folder; ``extra_flags(root)`` adds flags. Both run in the submission's
    grading process. A submission whose grading process dies still gets a report (score 0,
    a grader error).
    """
    with Sandbox() as sandbox:
        from grader.grade import build_report, grade, load_rubric
        from grader.submission import Taken

        rubric = load_rubric(assignment, settings)  # fails early for an unknown assignment
        from grader import environment

        environment.verify(sandbox)  # once per batch, before any fork: a broken environment grades nobody
        _warm_imports()
        pending = list(roots)
        running: dict[int, tuple[Path, int, bytearray]] = {}
        while pending or running:
            while pending and len(running) < jobs:
                root = pending.pop(0)
                read_end, write_end = os.pipe()
                pid = os.fork()
                if pid == 0:  # a trusted grading process for one submission
                    os.close(read_end)
                    linux.die_with_parent()  # a batch killed outright leaves no grading behind
                    code = 0
                    try:
                        report = grade(root, assignment, settings, sandbox, known=known(root) if callable(known) else known)
                        if extra_flags is not None:
                            report.flags += extra_flags(root)
                        data = json.dumps(report.to_dict()).encode()
                        with os.fdopen(write_end, "wb") as out:
                            out.write(data)
                    except BaseException:  # noqa: BLE001 - the parent reports the failure
                        code = 1
                    finally:
                        os._exit(code)
                os.close(write_end)
                running[read_end] = (root, pid, bytearray())
            ready, _, _ = select.select(list(running), [], [])
            for fd in ready:
                root, pid, data = running[fd]
                chunk = os.read(fd, 1 << 20)
                if chunk:
                    data += chunk
                    continue
                os.close(fd)
                os.waitpid(pid, 0)
                del running[fd]
                try:
                    report = Report.from_dict(json.loads(data))
                except (ValueError, KeyError, TypeError):
                    report = build_report(rubric, None, Taken(), {})
                    report.grader_errors.append("the grading process for this submission failed")
                yield root, report


def _warm_imports() -> None:
    """Import what every grading process needs once, before forking."""
    import pytest  # noqa: F401
    import pytest_jsonreport.plugin  # noqa: F401
    import pytest_timeout  # noqa: F401
    import torch  # noqa: F401

    import grader.checks  # noqa: F401
    import grader.plugin  # noqa: F401
