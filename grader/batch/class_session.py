"""One pytest session for a whole class: the suite is collected once, then every submission
is graded in a process forked from the collected session.

Collecting imports the test modules (and the reference solutions and helpers they import),
which computes their module-level reference tensors; that, pytest's configuration and the
collection itself are the same for every student, so :func:`grade_class` does them once.
At ``pytest_runtestloop`` the :class:`ForkPerSubmission` plugin forks one trusted grading
process per submission, ``jobs`` at a time: the child takes the submission, sends its probes
to the sandbox and lets pytest's own loop run the tests (the comparisons); the parent relays
each child's report and returns without running any test itself. Each child starts from the
same freshly collected state (copy-on-write), so a grade is what ``grade`` alone gives. A test
whose probe value already passed for an earlier student is left out of a child's run and
recorded as passed (:mod:`grader.batch.passes`; ``batch --no-reuse`` runs every test).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import shutil
from pathlib import Path
from typing import BinaryIO, Callable

import pytest

from grader import submission
from grader.sandbox import seeding
from grader.assignment import Assignment
from grader.grade import report_of_run, run_suite
from grader.model import Report
from grader.batch.passes import Passes, passed_on
from grader.sandbox import linux
from grader.sandbox.client import Sandbox
from grader.settings import Settings


class ForkPerSubmission:
    """pytest plugin: the shared session's test loop forks a grading process per submission."""

    def __init__(self, roots: list[Path], jobs: int, start: Callable, relay: Callable[[int, bytes], None],
                 spare: Callable[[], bool] = lambda: False):
        self.roots = roots
        self.jobs = jobs
        self.start = start  # start(root, session) in the child: take the submission, run its probes
        self.relay = relay  # relay(index, report bytes) in the parent, as each child ends
        self.spare = spare  # spare() in the parent, while it waits: one small piece of work for later children; False if none
        self.child: tuple | None = None  # (index, what start returned, report pipe) in a grading process

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session):
        """Fork per submission; a child returns None (pytest's loop runs its tests), the parent True."""
        for item in session.items:  # every test's report needs its location: found once, here
            _ = item.location
        # What collection made is shared by every child: kept out of the collector's way, so a
        # child's garbage collections neither walk nor copy (copy-on-write) those pages.
        gc.freeze()
        pending = list(enumerate(self.roots))
        running: dict[int, tuple[int, int, bytearray]] = {}
        while pending or running:
            while pending and len(running) < self.jobs:
                index, root = pending.pop(0)
                read_end, write_end = os.pipe()
                pid = os.fork()
                if pid == 0:  # a trusted grading process for one submission
                    os.close(read_end)
                    linux.die_with_parent()  # a batch killed outright leaves no grading behind
                    try:
                        self.child = (index, self.start(root, session), os.fdopen(write_end, "wb"))
                    except BaseException:  # noqa: BLE001 - the batch reports the failure
                        os._exit(1)
                    return None
                os.close(write_end)
                running[read_end] = (index, pid, bytearray())
            ready = self.wait(list(running), bool(pending))
            for fd in ready:
                index, pid, data = running[fd]
                chunk = os.read(fd, 1 << 20)
                if chunk:
                    data += chunk
                    continue
                os.close(fd)
                os.waitpid(pid, 0)
                del running[fd]
                self.relay(index, bytes(data))
        return True

    def wait(self, fds: list[int], forks_to_come: bool) -> list[int]:
        """The children's pipes that are ready; while none is, and children are still to be
        forked (who would inherit it), do spare work a piece at a time."""
        if forks_to_come:
            while not (ready := select.select(fds, [], [], 0)[0]):
                if not self.spare():
                    break
            else:
                return ready
        return select.select(fds, [], [])[0]


class Warmer:
    """What diagnoses compare with (the reference's and each catalog mistake's results on a module's
    probes, ``catalog.warming``), computed in the collecting process one result at a time while it
    waits: every grading process forked later finds them in its copy of the cache instead of
    computing them itself (some 0.15 s of a grading process's CPU for one mistake, 0.8 s for the
    whole of ch03 once). The modules a report showed losing points come first (others will likely
    meet them), then every other. Only a speed-up: any failure stops it."""

    def __init__(self, plugin):
        self.plugin = plugin
        self.order: list[str] = []  # the modules to warm, next first
        self.started: set[str] = set()
        self.steps: dict[str, object] = {}

    def prefer(self, stems: set[str]) -> bool:
        """Warm these modules next (they lost points for a student); whether any was not warmed yet."""
        self.order[:0] = sorted(stems - self.started)
        self.started |= stems
        return bool(self.order)

    def step(self) -> bool:
        """Compute one result; False when nothing is left to compute (or warming failed)."""
        from grader.diagnosis import catalog
        from grader.suite.diagnosis_session import catalog_source

        try:
            while self.order or self.prefer({call[0] for call in self.calls()}):
                stem = self.order[0]
                if stem not in self.steps:
                    source = catalog_source(self.plugin.assignment)
                    if source is None:
                        return self.stop()
                    calls = [call for call in self.calls() if call[0] == stem]
                    self.steps[stem] = catalog.warming(source, calls)
                if next(self.steps[stem], None) is not None:
                    return True
                self.order.pop(0)
            return False
        except Exception:  # noqa: BLE001 - only a speed-up: each grading process computes what it lacks
            return self.stop()

    def calls(self):
        """Every probe call of the suite the collecting process found (none if it found none)."""
        return self.plugin.suite.calls.values() if self.plugin.suite is not None else ()

    def stop(self) -> bool:
        self.order = []
        self.started = {call[0] for call in self.calls()}  # never again
        return False


def grade_class(
    roots: list[Path],
    assignment: Assignment,
    settings: Settings,
    sandbox: Sandbox,
    out: BinaryIO,
    *,
    jobs: int,
    known: frozenset[str] | Callable[[Path], frozenset[str]] = frozenset(),
    extra_flags: Callable[[Path], list[str]] | None = None,
) -> None:
    """Grade ``roots``; write one line ``INDEX REPORT-JSON`` to ``out`` per submission as it ends.

    A line whose JSON is missing or broken means that submission's grading process failed.
    Returns in the collecting process when every submission is done; in a grading process it
    writes its report and the caller must exit.
    """
    import torch

    from grader.suite.diagnosis_session import catalog_source
    from grader.suite.plugin import GradingPlugin

    torch.set_num_threads(1)  # as in grade.grade: the checks compare tiny tensors
    seeding.seed_cpu_only()
    rubric = assignment.rubric
    names = [e.name for e in rubric.exercises]
    plugin = GradingPlugin(assignment=assignment, settings=settings)  # collects for all; each grading process starts its own
    with contextlib.suppress(Exception):  # a broken catalog is each grading process's diagnosis error, as alone
        catalog_source(assignment)  # read once for every fork

    passes = Passes()

    def start(root: Path, session) -> submission.Taken:
        workdir = sandbox.new_submission_dir()
        taken = submission.take(root, assignment.name, names, workdir, known=known(root) if callable(known) else known)
        plugin.start(sandbox, workdir, taken.missing)
        plugin.run_probes(session.items)  # this submission's, of the suite's probes the collector found
        if settings.reuse_passes:
            session.items[:], plugin.known_passes = passes.split(session.items, plugin.result)
        return taken

    warmer = Warmer(plugin)

    def relay(index: int, data: bytes) -> None:
        try:
            answer = json.loads(data)
            report, passed = answer["report"], dict(answer["passed"])
        except (ValueError, KeyError, TypeError):  # the grading process failed: the pool says so
            report, passed = None, {}
        out.write(f"{index} ".encode() + (json.dumps(report).encode() if report is not None else b"") + b"\n")
        out.flush()
        passes.learn(passed)
        warmer.prefer(failing_modules(report))

    forker = ForkPerSubmission(roots, jobs, start, relay, spare=warmer.step)
    log = run_suite(assignment.suite, assignment.solutions, plugin, forker)
    if forker.child is not None:  # a grading process, its submission's tests run
        index, taken, pipe = forker.child
        send_report(pipe, report_of_run(rubric, plugin, taken, log), plugin, extra_flags(roots[index]) if extra_flags else [])


def send_report(pipe: BinaryIO, report: Report, plugin, flags: list[str]) -> None:
    """A grading process's last step: its report (with ``flags`` added), and the values its
    submission's tests passed on for later forks, to the collecting process; its copy removed."""
    report.flags += flags
    with pipe:
        pipe.write(json.dumps({"report": report.to_dict(), "passed": passed_on(plugin.json_report, plugin.result)}).encode())
    # Its copy is read no more: removed, so that a batch of hundreds leaves no pile in the sandbox's
    # folder and the page cache's guard stops settling its files at every turn (pagecache.forget_deleted).
    shutil.rmtree(plugin.submission_dir, ignore_errors=True)


def failing_modules(report: dict | None) -> set[str]:
    """The modules that lost points in a grading process's report (none if it is unreadable)."""
    try:
        return {e["name"] for e in report["exercises"] if e["score"] < e["max_score"]}
    except (KeyError, TypeError):
        return set()
