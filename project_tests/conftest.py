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
    try:
        fcntl.flock(lock, fcntl.LOCK_EX if item.get_closest_marker("alone") else fcntl.LOCK_SH)
        return (yield)
    finally:
        os.close(lock)  # which releases the lock
