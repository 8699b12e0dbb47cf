"""The project's tests run side by side (``make test``: pytest-xdist, one worker per core, a
file per worker); a test marked ``alone`` runs while no other test of the run does.

Every test holds a shared lock on a file of this checkout (``build/project-tests.lock``, ignored
by git) from its set-up to its teardown (a module's fixtures are made and ended inside them); an
``alone`` test holds it exclusively. So what an ``alone`` test measures of the whole machine (the
keys the sandbox user owns) is not another test's grading at the same time. The lock belongs to
the checkout, not to the machine: two checkouts' runs never wait on each other, and a run grading
in another checkout at the same moment can still disturb that one measurement (CI runs alone).
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

LOCK = Path(__file__).resolve().parent.parent / "build" / "project-tests.lock"


def open_lock() -> int:
    """The lock file, opened for reading: another user's (a run as root left it) locks as well."""
    LOCK.parent.mkdir(exist_ok=True)
    try:
        return os.open(LOCK, os.O_RDONLY)
    except FileNotFoundError:
        try:
            return os.open(LOCK, os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:  # another worker made it meanwhile
            return os.open(LOCK, os.O_RDONLY)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    lock = open_lock()
    RUNNING.append(item)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX if item.get_closest_marker("alone") else fcntl.LOCK_SH)
        return (yield)
    finally:
        RUNNING.remove(item)
        os.close(lock)  # which releases the lock


RUNNING: list = []  # the test being set up, run or torn down (with the fixtures it makes or ends)


# -- the tiers ---------------------------------------------------------------------------------------
# `make check` runs the tests that start no Python interpreter (`-m "not end_to_end"`, with
# PROJECT_TESTS_TIER=check); `make test` runs them all. A whole file that grades through the real
# command line, the sandbox, a release or a notebook kernel is listed here; a test elsewhere that
# does so carries @pytest.mark.end_to_end itself. In the check tier, starting an interpreter fails
# the test with that advice, so the tier stays what it says.
END_TO_END_FILES = {
    "test_actions.py", "test_add_assignment.py", "test_batch.py", "test_check.py",
    "test_diagnosis.py", "test_grading.py", "test_mutants.py", "test_notebooks.py", "test_rehearsal.py",
    "test_release.py", "test_reused_passes.py", "test_shared_box.py", "test_steps_on_demand.py",
    "test_workflow.py", "test_class_report.py", "test_slips.py", "test_unseen_mistakes.py", "test_kept_mistakes.py",
    "test_honest_rewrites.py", "test_mechanism.py", "test_agreement.py", "test_report.py",
}
END_TO_END_TESTS = {"test_closing_a_box_reaps_what_its_workers_left_so_that_init_ends",
                    "test_each_mistake_of_the_suite_is_a_grader_error_naming_test_file_and_problem",
                    "test_a_probe_failing_on_what_the_student_gave_is_the_students_error"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if (item.path.name in END_TO_END_FILES or item.path.name.startswith("test_hostile")
                or item.originalname in END_TO_END_TESTS):
            item.add_marker(pytest.mark.end_to_end)
    items[:] = in_schedule_order(items)


# -- the schedule -------------------------------------------------------------------------------------
# `make test` hands whole files to its workers in the order collected (`--dist loadfile
# --no-loadscope-reorder`), so that order is the schedule. A file of `alone` tests goes first: its
# tests wait for every other worker's running test to end, which was once a corpus's fixture of
# nine minutes while a core idled. The in-process files follow (a few seconds: the other worker
# spends them beside the `alone` file, mostly waiting for it); then the files whose module fixtures
# take minutes, longest first, so that none of them starts last while the other worker idles; then
# the rest. Only an order: a file missing from the list or misplaced costs minutes, never a result.
LONGEST_FIRST = ["test_kept_mistakes.py", "test_hostile_batch.py", "test_unseen_mistakes.py", "test_check.py",
                 "test_hostile_cli.py", "test_hostile_checks.py", "test_mechanism.py", "test_grading.py",
                 "test_mutants.py", "test_honest_rewrites.py"]


def in_schedule_order(items: list) -> list:
    """``items`` with each file's tests together, in their order, the files in the schedule's."""
    alone = {item.path for item in items if item.get_closest_marker("alone")}
    in_process = {item.path for item in items} - {item.path for item in items if item.get_closest_marker("end_to_end")}

    def rank(item) -> tuple[int, int]:
        if item.path in alone:
            return 0, 0
        if item.path in in_process:
            return 1, 0
        if item.path.name in LONGEST_FIRST:
            return 2, LONGEST_FIRST.index(item.path.name)
        return 3, 0

    return sorted(items, key=rank)  # stable: within a rank, files and tests keep the order collected


@pytest.fixture(autouse=True, scope="session")
def _no_interpreter_in_the_check_tier():
    """In the check tier, a test that starts a Python interpreter fails, whether the test itself or
    a fixture it makes starts it (a module's fixture is made inside its first test's set-up)."""
    if os.environ.get("PROJECT_TESTS_TIER") != "check":
        yield
        return
    real = subprocess.Popen.__init__

    def refuse_python(self, args, *rest, **kwargs):
        program = Path(str(args[0] if isinstance(args, (list, tuple)) else str(args).split()[0])).name
        item = RUNNING[-1] if RUNNING else None
        if ((program.startswith("python") or program == Path(sys.executable).name)
                and not (item is not None and item.get_closest_marker("end_to_end"))):
            raise RuntimeError(f"{item.nodeid if item else 'a session fixture'} starts a Python interpreter ({program}): "
                               "mark it @pytest.mark.end_to_end (make check runs none)")
        return real(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = refuse_python
    try:
        yield
    finally:
        subprocess.Popen.__init__ = real
