"""The sandbox's client in the trusted process (grader/sandbox/client.py)."""

from __future__ import annotations

import sys
import threading

import pytest

from grader.environment import verify_sandbox
from grader.sandbox.client import Sandbox
from grader.settings import Settings

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox runs on Linux"),
              pytest.mark.timeout(300), pytest.mark.end_to_end]


def test_threads_of_one_process_run_their_plans_side_by_side():
    """``grade`` checks the sandbox in a thread while its own thread grades: each thread's plan
    gets its own outcomes, whichever thread reads first (they once shared one connection, and a
    thread could read the other's answer: the run then called the environment broken)."""
    failures: list[BaseException] = []

    def check(sandbox):
        try:
            verify_sandbox(sandbox, Settings())
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    with Sandbox() as sandbox:
        threads = [threading.Thread(target=check, args=(sandbox,)) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not failures, failures
