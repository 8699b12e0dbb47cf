"""Running the grader on a hostile stage: as root (the instructor's ``batch``), as an unprivileged
user with or without user namespaces, and skipping (or failing under CI) where this machine
cannot give student code its isolation.
"""

from __future__ import annotations

import os
import resource
import subprocess
from dataclasses import dataclass

import pytest

from project_tests.adversarial.harness import PYTHON, Stage


def skip_without_isolation(reason: str) -> None:
    """Skip, or fail when the run asks for full isolation (``GRADER_REQUIRE_ISOLATION=1``, set
    by the project's CI and ``.ci/run``): there the hostile suite must run, not skip."""
    if os.environ.get("GRADER_REQUIRE_ISOLATION") == "1":
        pytest.fail(f"GRADER_REQUIRE_ISOLATION=1, but {reason}", pytrace=False)
    pytest.skip(reason)


def require_isolation() -> None:
    """Skip unless student code run by this user would get namespaces and the system-call
    filter (``confine.probe``).

    In the fallback, student code runs as this very user without namespaces: a hostile
    submission could kill the test run (``kill(-1)``) or overwrite the checkout. Where that
    is so (a runner whose user namespaces are restricted), run the tests as root, or lift the
    restriction first (``sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0``).
    """
    from grader.sandbox import confine

    found = confine.probe()
    if found != confine.NAMESPACES:
        skip_without_isolation(f"hostile submissions need the namespaced, filtered sandbox; this user gets less ({found})")


@dataclass
class Run:
    """One finished command: its output, and the CPU time it and the processes it waited for used."""

    returncode: int
    stdout: str
    stderr: str
    cpu_seconds: float


def children_cpu() -> float:
    """CPU seconds (user and system) of this process's waited-for children so far.

    Tests bound CPU time, never wall-clock time: a busy machine stretches the one, not the other.
    """
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_grader(stage: Stage, *args: str, env: dict[str, str] | None = None, timeout: float = 900) -> Run:
    """``python -m grader ARGS`` from the repository copy, with the stage's secrets."""
    start = children_cpu()
    proc = subprocess.run(
        [PYTHON, "-m", "grader", *args], cwd=stage.repo, capture_output=True, text=True,
        timeout=timeout, env={**stage.env, **(env or {})},
    )
    return Run(proc.returncode, proc.stdout, proc.stderr, children_cpu() - start)


UNPRIVILEGED = r'''
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
allow, args = sys.argv[1] == "1", sys.argv[2:]
ready, go = os.pipe(), os.pipe()
pid = os.fork()
if pid == 0:
    if libc.unshare(0x10000000) != 0:
        os._exit(90)
    os.write(ready[1], b"x")
    os.read(go[0], 1)
    if not allow:  # no user namespace below this one: the grader must fall back
        with open("/proc/sys/user/max_user_namespaces", "w") as handle:
            handle.write("0")
    os.setgroups([])
    os.setresgid(1001, 1001, 1001)
    os.setresuid(1001, 1001, 1001)
    os.execv(args[0], args)
os.read(ready[0], 1)
for name in ("uid_map", "gid_map"):
    with open(f"/proc/{pid}/{name}", "w") as handle:
        handle.write("0 100000 1\n1001 0 1\n")
os.write(go[1], b"x")
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
'''


def run_unprivileged(stage: Stage, *args: str, user_namespaces: bool, env: dict[str, str] | None = None,
                     timeout: float = 600) -> Run:
    """``python -m grader ARGS`` as a user that is not root (uid 1001 of a user namespace).

    That user is the files' owner (the real root outside), so the venv and the repository stay
    readable as on a runner where the grader runs as the checkout's owner; it has no capability.
    With ``user_namespaces=False`` it may not create user namespaces, as on a runner where they
    are disabled, and the grader must fall back.
    """
    start = children_cpu()
    proc = subprocess.run(
        [PYTHON, "-c", UNPRIVILEGED, "1" if user_namespaces else "0", PYTHON, "-m", "grader", *args],
        cwd=stage.repo, capture_output=True, text=True, timeout=timeout, env={**stage.env, **(env or {})},
    )
    return Run(proc.returncode, proc.stdout, proc.stderr, children_cpu() - start)
