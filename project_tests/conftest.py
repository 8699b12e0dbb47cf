"""The project's tests run side by side (``make test``: pytest-xdist, one worker per core, a
file per worker); a test marked ``alone`` runs while no other test of the run does.

Every test holds a shared lock on a file of this machine's temporary folder from its set-up to
its teardown (a module's fixtures are made and ended inside them); an ``alone`` test holds it
exclusively. So what an ``alone`` test measures of the whole machine (the keys the sandbox user
owns) is not another test's grading at the same time.
"""

from __future__ import annotations

import fcntl
import os
import tempfile

import pytest

LOCK = os.path.join(tempfile.gettempdir(), "attention-grader-project-tests.lock")


def open_lock() -> int:
    """The lock file, opened for reading: another user's (a run as root left it) locks as well."""
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
