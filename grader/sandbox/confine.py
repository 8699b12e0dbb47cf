"""Fork a worker into a confined process: own session, limits, no privileges, captured output.

Runs in the zygote (trusted). ``spawn`` returns at once in the parent with a handle; the
child confines itself and then runs student code through ``run``.
"""

from __future__ import annotations

import os
import pwd
import resource
import select
import signal
import sys
import tempfile
import time


class Worker:
    """The zygote's handle on one forked worker."""

    def __init__(self, pid: int, channel: int, output_fd: int):
        self.pid = pid
        self.channel = channel  # read end of the worker's result pipe
        self.output_fd = output_fd  # the file that holds the worker's stdout and stderr
        self.status: int | None = None

    def _reap(self, wait: float) -> None:
        end = time.monotonic() + wait
        while self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
            elif time.monotonic() >= end:
                return
            else:
                time.sleep(0.005)

    def death_message(self) -> str:
        """Why the worker stopped talking, in words a student understands."""
        self._reap(wait=1.0)
        if self.status is None:
            return "your code closed the grader's channel"
        if os.WIFSIGNALED(self.status):
            sig = os.WTERMSIG(self.status)
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
            why = {
                "SIGSEGV": "a segmentation fault",
                "SIGXCPU": "using up its CPU time",
                "SIGXFSZ": "writing too much output",
                "SIGKILL": "being killed (out of memory, or by your code)",
                "SIGABRT": "an abort",
            }.get(name, name)
            return f"the process running your code died from {why}"
        code = os.WEXITSTATUS(self.status)
        return f"the process running your code exited early with status {code} (sys.exit or os._exit?)"

    def finish(self, keep: int) -> bytes:
        """Kill the worker and everything it started; return the start of its output."""
        kill_group(self.pid)
        self._reap(wait=5.0)
        os.close(self.channel)
        output = os.pread(self.output_fd, keep, 0)
        os.close(self.output_fd)
        return output


def kill_group(pid: int) -> None:
    """SIGKILL the worker's process group (it is the leader of its own session)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def spawn(limits: dict, prepare, run) -> Worker:
    """Fork a worker: ``prepare()`` runs before confinement, ``run(channel, prepared)`` after."""
    output = tempfile.TemporaryFile()
    output_fd = os.dup(output.fileno())
    output.close()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker
        status = 0
        try:
            os.close(read_end)
            os.setsid()
            prepared = prepare()
            redirect_output(output_fd)
            confine(limits)
            with os.fdopen(write_end, "w") as channel:
                run(channel, prepared)
        except BaseException:  # noqa: BLE001 - the worker must end here, whatever happened
            status = 70
        finally:
            os._exit(status)
    os.close(write_end)
    return Worker(pid, read_end, output_fd)


def redirect_output(output_fd: int) -> None:
    """Send stdout and stderr (Python's and the C library's) to the capture file."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    os.close(devnull)
    os.close(output_fd)
    sys.stdout = open(1, "w", closefd=False, buffering=1)
    sys.stderr = open(2, "w", closefd=False, buffering=1)


def confine(limits: dict) -> None:
    """Apply resource limits and drop privileges; after this, student code may run."""
    mib = 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_mb"] * mib,) * 2)
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_seconds"], limits["cpu_seconds"] + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_mb"] * mib,) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if os.geteuid() == 0:
        user = pwd.getpwnam(limits["sandbox_user"])
        os.setgroups([])
        os.setgid(user.pw_gid)
        os.setuid(user.pw_uid)
        # Processes of the sandbox user only: a fork bomb stops here.
        resource.setrlimit(resource.RLIMIT_NPROC, (64, 64))
    sys.dont_write_bytecode = True
    os.environ.clear()
    os.environ.update({"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1"})


