"""How a supervisor waits for a worker it killed (grader/sandbox/linux.py: wait_for_exit): it
resumes when the worker has ended, or when the worker's output has something to drain, not
when a timer runs out. Each wait below is given an hour: only the event can end it in time
(pytest-timeout fails the test otherwise)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest

from grader.sandbox import linux
from project_tests.adversarial.grader_runs import require_isolation
from project_tests.helpers import ROOT

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


def test_without_a_pidfd_a_deadline_already_past_is_no_error(monkeypatch):
    """The fallback polls: a caller whose deadline has passed (it drained output past it) gets
    its turn back, not a ValueError from a negative timeout."""
    monkeypatch.delattr(os, "pidfd_open")
    pid = os.fork()
    if pid == 0:
        signal.pause()
        os._exit(0)
    try:
        linux.wait_for_exit(pid, -1.0)
        linux.wait_for_exit(pid, -1.0, also=(0,))
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


CLOSE_WITH_A_WORKER_NOT_REAPED = """
import os, signal, sys, time
from grader.sandbox import confine, linux
confine.init_command()
linux.unshare(linux.CLONE_NEWPID, "unshare(pid)")
box = confine.Box.__new__(confine.Box)
box.init = confine._start_init()
worker = os.fork()  # in the namespace; its supervisor (this process) has not reaped it
if worker == 0:
    signal.pause()
    os._exit(0)
box.close()
print("init ended:", box.init.poll() is not None)
"""


def test_closing_a_box_reaps_what_its_workers_left_so_that_init_ends():
    """The kernel lets a namespace's init end only once every process of it is reaped, workers
    included, whose parent is the supervisor: Box.close reaps them while it waits for init."""
    require_isolation()
    proc = subprocess.run([sys.executable, "-c", CLOSE_WITH_A_WORKER_NOT_REAPED], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "init ended: True" in proc.stdout
