"""Grade many submissions in one run: torch and pytest are imported once, then each
submission is graded in a forked copy of this (trusted) process, ``jobs`` at a time,
all sharing one sandbox zygote.
"""

from __future__ import annotations

import json
import os
import select
from pathlib import Path
from typing import Iterator

from grader.model import Report
from grader.sandbox.client import Sandbox
from grader.settings import Settings


def grade_many(
    roots: list[Path], assignment: str, settings: Settings, *, jobs: int = 2, known: frozenset[str] = frozenset()
) -> Iterator[tuple[Path, Report]]:
    """Yield ``(root, report)`` for every submission folder, in the order they finish.

    A submission whose grading process dies still gets a report (score 0, a grader error).
    """
    with Sandbox() as sandbox:
        from grader.grade import build_report, grade, load_rubric
        from grader.submission import Taken

        rubric = load_rubric(assignment, settings)  # fails early for an unknown assignment
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
                    code = 0
                    try:
                        report = grade(root, assignment, settings, sandbox, known=known)
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
