"""How a supervisor waits for a worker it killed (grader/sandbox/linux.py: wait_for_exit): it
resumes when the worker has ended, or when the worker's output has something to drain, not
when a timer runs out. Each wait below is given an hour: only the event can end it in time
(pytest-timeout fails the test otherwise)."""

from __future__ import annotations

import os
import signal
import sys
import threading

import pytest

from grader.sandbox import linux

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox runs on Linux"),
              pytest.mark.timeout(120)]
HOUR = 3600.0


def test_returns_when_the_child_ends_and_leaves_it_to_be_reaped():
    ready, go = os.pipe()
    pid = os.fork()
    if pid == 0:  # ends once told to
        os.read(ready, 1)
        os._exit(7)
    # Told a little after the wait has begun: a wait that came back on a timer of its own (the
    # 5 ms of the fallback) would find the child still running.
    threading.Timer(0.3, os.write, (go, b"x")).start()
    linux.wait_for_exit(pid, HOUR)
    reaped, status = os.waitpid(pid, os.WNOHANG)
    assert reaped == pid and os.WEXITSTATUS(status) == 7


def test_returns_when_a_watched_descriptor_is_readable_while_the_child_runs():
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write_end, b"output")
        signal.pause()
        os._exit(0)
    try:
        linux.wait_for_exit(pid, HOUR, also=(read_end,))
        assert os.read(read_end, 6) == b"output"
        assert os.waitpid(pid, os.WNOHANG) == (0, 0)  # still running
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
