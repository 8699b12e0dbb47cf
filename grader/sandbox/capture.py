"""The zygote's handle on a running worker: its result channel, its output, how it died.

A worker's stdout and stderr go to a pipe that its supervisor drains while it waits for
results (:meth:`Worker.drain`): the first characters are kept for the report, the rest is
read and thrown away, so printing never stalls a worker and never costs it a point.
In the worker, :func:`redirect_output` and :func:`keep_only_channel` set up that pipe and
the result channel before it is confined.
"""

from __future__ import annotations

import fcntl
import os
import resource
import signal
import sys
import time

from grader.sandbox import linux, syscall_filter


class Capture:
    """What one module's workers printed: the start of it, and how much more was thrown away."""

    def __init__(self, chars: int):
        self.chars = chars
        self.kept = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        """Keep what fits (4 bytes per character at most in UTF-8), count the rest."""
        room = max(self.chars * 4 - len(self.kept), 0)
        self.kept += chunk[:room]
        self.dropped += max(len(chunk) - room, 0)

    def text(self) -> str:
        """The kept output, decoded, with a last line saying it was cut when it was."""
        text = self.kept.decode("utf-8", "replace")
        cut = self.dropped > 0 or len(text) > self.chars
        text = text[: self.chars]
        if cut:
            more = len(self.kept.decode("utf-8", "replace")[self.chars:].encode()) + self.dropped
            text += f"\n… (output cut: {more} more bytes were printed and not kept)"
        return text


class Worker:
    """One forked worker, as its supervisor sees it."""

    def __init__(self, pid: int, channel: int, output: int, capture: Capture):
        self.pid = pid
        self.channel: int | None = channel  # read end of the worker's result pipe (None once finished)
        self.output: int | None = output  # read end of its stdout/stderr pipe, until end of file
        self.capture = capture
        self.status: int | None = None
        self.prepared = "ok"  # how its preparation went (Box.spawn): "ok", "unloaded" or "lost"
        fcntl.fcntl(output, fcntl.F_SETFL, fcntl.fcntl(output, fcntl.F_GETFL) | os.O_NONBLOCK)

    def drain(self) -> None:
        """Read whatever output is waiting (never blocks); close the pipe at its end."""
        while self.output is not None:
            try:
                chunk = os.read(self.output, 1 << 16)
            except BlockingIOError:
                return
            if not chunk:
                os.close(self.output)
                self.output = None
                return
            self.capture.add(chunk)

    def _reap(self, wait: float) -> None:
        end = time.monotonic() + wait
        while self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
            elif time.monotonic() >= end:
                return
            else:
                self.drain()
                linux.wait_for_exit(self.pid, end - time.monotonic(), () if self.output is None else (self.output,))

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
                "SIGXFSZ": "writing a file larger than the limit",
                "SIGKILL": "being killed (out of memory, or by your code)",
                "SIGABRT": "an abort",
            }.get(name, name)
            if sig == syscall_filter.SIGNAL:
                return f"the process running your code was stopped: {syscall_filter.EXPLAINED}"
            return f"the process running your code died from {why}"
        code = os.WEXITSTATUS(self.status)
        return f"the process running your code exited early with status {code} (sys.exit or os._exit?)"

    def finish(self) -> None:
        """Kill the worker and its process group; keep the output it left in the pipe (once: a
        second call does nothing)."""
        if self.channel is None:
            return
        # Its group (it leads its own session) and itself (stopped before it could lead one); only
        # while it is not reaped, so that the pid is still its.
        for kill in (os.killpg, os.kill) if self.status is None else ():
            try:
                kill(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self._reap(wait=5.0)
        self.drain()
        os.close(self.channel)
        self.channel = None
        if self.output is not None:  # a leftover of the worker may still hold it open
            os.close(self.output)
            self.output = None


# -- in the worker, before it is confined ----------------------------------------------------------
def redirect_output(output_fd: int) -> None:
    """Send stdout and stderr (Python's and the C library's) to the capture pipe."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    os.close(devnull)
    os.close(output_fd)
    sys.stdout = open(1, "w", closefd=False, buffering=1)
    sys.stderr = open(2, "w", closefd=False, buffering=1)


def keep_only_channel(channel: int) -> int:
    """Close every inherited descriptor (the client's socket, other modules' pipes) but
    stdin, stdout, stderr and the result channel, which becomes descriptor 3."""
    if channel != 3:
        os.dup2(channel, 3)
        os.close(channel)
    os.closerange(4, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    return 3
