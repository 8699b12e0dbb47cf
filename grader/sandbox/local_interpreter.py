"""One interpreter the local runner spawns: the runner's handle on it, and what runs inside it.

:class:`grader.sandbox.local.LocalRunner` starts ``python -I local_interpreter.py`` (the same on
every OS), which imports torch once and then runs one module's probes per task read from its
stdin (:func:`child_main`), forgetting every module the last one loaded. The runner's side,
:class:`Interpreter`, sends the tasks and reads each line back with a deadline. Both ends of the
one pipe are here, apart from the runner's scheduling of plans over its interpreters. Started by
path, this module imports only the standard library until it imports torch.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

if __name__ == "__main__":  # started by path with -I: make the grader package importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from grader import accelerators  # noqa: E402 - the standard library only
from grader.sandbox import probe_loop, wire  # noqa: E402 - the standard library only
from grader.sandbox.protocol import ModulePlan  # noqa: E402 - the standard library only


class Interpreter:
    """One spawned interpreter; it runs one module's probes per task it is sent."""

    def __init__(self, root: Path):
        self.started = False
        self.done = False  # the last task ran to its end (its "finished" line came)
        self.log = open(tempfile.mkstemp(prefix="interpreter-", suffix=".log", dir=root)[1], "wb")
        # The command's own environment hides the accelerators already (grader/__main__.py); given
        # again here for any other caller (grader/accelerators.py).
        self.process = subprocess.Popen(
            [sys.executable, "-I", str(Path(__file__))], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.log, cwd=root, env=accelerators.hide(dict(os.environ)))
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def next_line(self, deadline: float):
        """Its next line (without its end), or ``probe_loop.TIMED_OUT``, ``ENDED``, ``TOO_LONG``."""
        try:
            line = self.lines.get(timeout=max(deadline - time.monotonic(), 0))
        except queue.Empty:
            return probe_loop.TIMED_OUT
        if line is None:
            return probe_loop.ENDED
        return probe_loop.TOO_LONG if len(line) > wire.MAX_LINE else line.rstrip(b"\n")

    def started_within(self, seconds: float) -> bool:
        """Whether it has said it started (torch imported), waiting ``seconds`` for it the first time."""
        if not self.started:
            self.started = isinstance(self.next_line(time.monotonic() + seconds), bytes)
        return self.started

    def alive(self) -> bool:
        """Still running, and ready for a task."""
        return self.process.poll() is None

    def send(self, task: dict) -> None:
        """Start a task (one module's probes from some index on)."""
        self.done = False
        try:
            self.process.stdin.write(json.dumps(task).encode() + b"\n")
            self.process.stdin.flush()
        except OSError:  # it has died: its lines say so
            pass

    def finished(self) -> bool:
        """The last task ran to its end and the interpreter waits for the next."""
        return self.done and self.alive()

    def death_message(self) -> str:
        """Why the interpreter stopped talking, in the sandbox's words."""
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "your code closed the grader's channel"
        if code < 0:  # POSIX: ended by a signal
            return f"the process running your code died from signal {-code}"
        return f"the process running your code exited early with status {code} (sys.exit or os._exit?)"

    def stop(self) -> None:
        """End the interpreter, whatever it is doing."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.log):
            try:
                stream.close()
            except OSError:
                pass


def child_main() -> None:
    """In the spawned interpreter: import torch, then run each task read from stdin, one module at a time."""
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # nothing but the grader's own lines goes to the channel
    accelerators.hide()
    import torch

    from grader.sandbox import worker  # imports torch's users: only here, never in the caller's import of this module

    accelerators.hide_mps(torch)  # a Mac: student code that asks finds no GPU, as in grading
    torch.set_num_threads(1)
    baseline_modules, baseline_path, home = set(sys.modules), list(sys.path), os.getcwd()
    channel.write(json.dumps({"event": "started"}) + "\n")
    channel.flush()
    for line in sys.stdin:
        task = json.loads(line)
        with open(task["output"], "ab") as output:  # what student code prints goes here
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(output.fileno(), 1)
            os.dup2(output.fileno(), 2)
        module = ModulePlan.from_wire(task["module"])
        for dependency, path in module.uses.items():
            worker.load_reference(dependency, path)
        probes_module = worker.load_probes(task["stem"], module.probes_file)
        worker.run(channel, task["stem"], task["sandbox_dir"], probes_module, module.probes, steps=task["steps"])
        sys.stdout.flush()
        sys.stderr.flush()
        for name in set(sys.modules) - baseline_modules:  # the next module starts from a clean slate
            del sys.modules[name]
        sys.path[:] = baseline_path
        os.chdir(home)
        channel.write(json.dumps({"event": "finished"}) + "\n")
        channel.flush()


if __name__ == "__main__":
    child_main()
