"""A student's own machine: the same plans as the sandbox, with no fork, namespaces, prctl or root.

``python -m grader check`` (and plain ``pytest`` in a template) run the public tests on the
student's own code, on Linux, macOS or Windows. There is nothing to protect there, so
:class:`LocalRunner` confines nothing. It spawns interpreters (``python -I local.py``, the same
on every OS), ``workers`` of them, each importing torch once and then running one module
after another with :func:`grader.sandbox.worker.run`, forgetting every module the last one
loaded. This process times every line an interpreter sends; after a hang or a crash it ends
that interpreter and continues at the next probe in a fresh one. The outcomes are the
sandbox's: ok, error, timeout, crash, module_error.
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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

if __name__ == "__main__":  # started by path with -I: make the grader package importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from grader import accelerators  # noqa: E402 - the standard library only

MODE = "local: the student's own machine, nothing confined"
START_TIMEOUT = 300.0  # seconds a fresh interpreter may take to import torch (a cold laptop is slow)


def runner_for_this_machine(workers: int):
    """The sandbox where this OS has what it needs (Linux with fork); elsewhere a :class:`LocalRunner`."""
    if sys.platform.startswith("linux") and hasattr(os, "fork"):
        from grader.sandbox.client import Sandbox

        return Sandbox()
    return LocalRunner(workers)


class LocalRunner:
    """Runs plans in spawned interpreters; the interface of ``client.Sandbox``."""

    def __init__(self, workers: int = 2):
        self.isolation = {MODE}
        self._tmp = tempfile.TemporaryDirectory(prefix="grader-local-")
        self.root = Path(self._tmp.name)
        # They import torch while the caller imports the rest.
        self._idle: list[_Child] = [_Child(self.root) for _ in range(max(1, workers))]

    def new_submission_dir(self) -> Path:
        """A fresh folder to copy one submission into."""
        return Path(tempfile.mkdtemp(prefix="submission-", dir=self.root))

    def run(self, plan: dict, timeout: float):
        """Run every module of ``plan``, ``workers`` interpreters at a time; return a ``PlanResult``."""
        from grader.sandbox.client import PlanResult, decode_outcome

        result = PlanResult()
        self.spent = result.spent  # each module's, filled in by _run_module
        pending: queue.Queue = queue.Queue()
        for item in plan["modules"].items():
            pending.put(item)

        def drain() -> list[tuple[str, list[dict], str]]:
            done, child = [], self._take()
            while True:
                try:
                    stem, spec = pending.get_nowait()
                except queue.Empty:
                    break
                events, output, child = self._run_module(plan, stem, spec, child)
                done.append((stem, events, output))
            self._give_back(child)
            return done

        workers = max(1, min(plan["limits"]["workers"], len(plan["modules"])))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            finished = [item for batch in pool.map(lambda _: drain(), range(workers)) for item in batch]
        for stem, events, output in finished:
            result.isolation[stem] = MODE
            result.output[stem] = output
            for event in events:
                result.outcomes[event["id"]] = decode_outcome(event)
        return result

    def _take(self) -> "_Child | None":
        try:
            return self._idle.pop()
        except IndexError:
            return None

    def _give_back(self, child: "_Child | None") -> None:
        if child is not None:
            self._idle.append(child)

    def _run_module(self, plan: dict, stem: str, spec: dict, child):
        """Run one module's probes; return its events, its output and the interpreter to reuse (or None)."""
        limits, probes = plan["limits"], spec["probes"]
        budget = min(float(spec.get("budget", limits["module_budget"])), limits["module_budget"])
        started = time.monotonic()
        budget_end = started + budget
        events: list[dict] = []
        output = b""
        next_probe = 0
        while next_probe < len(probes) and time.monotonic() < budget_end:
            base = next_probe
            child = child if child is not None and child.alive() else _Child(self.root)
            captured = Path(tempfile.mkstemp(prefix=f"{stem}-", suffix=".out", dir=self.root)[1])
            child.send({"stem": stem, "sandbox_dir": plan["sandbox_dir"], "uses": spec.get("uses", {}),
                        "probes_file": spec["probes_file"], "probes": probes[base:], "output": str(captured),
                        "steps": plan.get("steps", True)})
            for index, event in child.events(len(probes) - base, limits["probe_timeout"], budget_end):
                if index < 0:  # the module could not be imported: every probe says why
                    events += [{"id": p["id"], **event} for p in probes[base:]]
                    next_probe = len(probes)
                    break
                events.append({"id": probes[base + index]["id"], **event})
                next_probe = base + index + 1
            if not child.finished():  # it hung, crashed or never started: a fresh one goes on
                child.stop()
                child = None
                if next_probe == base:
                    events += [{"id": p["id"], "outcome": "module_error", "error": {
                        "type": "Crash", "message": "Python could not start the check (see the output)"}}
                        for p in probes[base:]]
                    next_probe = len(probes)
            output += captured.read_bytes()[: limits["output_chars"] * 4]
        events += [{"id": p["id"], "outcome": "timeout", "error": {
            "message": f"not run: {stem}.py used up its {limits['module_budget']:g} s time budget"}}
            for p in probes[next_probe:]]
        from grader.hygiene import clean

        self.spent[stem] = min(time.monotonic() - started, budget)
        return events, clean(output, limits["output_chars"], one_line=False), child

    def close(self) -> None:
        """End the idle interpreters and remove the temporary files."""
        for child in self._idle:
            child.stop()
        self._idle.clear()
        self._tmp.cleanup()

    def __enter__(self) -> "LocalRunner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Child:
    """One spawned interpreter; it runs one module's probes per task it is sent."""

    def __init__(self, root: Path):
        self.started = False
        self._done = False
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

    def _next(self, deadline: float):
        try:
            return self.lines.get(timeout=max(deadline - time.monotonic(), 0))
        except queue.Empty:
            return TimeoutError

    def alive(self) -> bool:
        """Still running, and ready for a task."""
        return self.process.poll() is None

    def send(self, task: dict) -> None:
        """Start a task (one module's probes from some index on)."""
        self._done = False
        try:
            self.process.stdin.write(json.dumps(task).encode() + b"\n")
            self.process.stdin.flush()
        except OSError:  # it has died: events() reports it
            pass

    def finished(self) -> bool:
        """The last task ran to its end and the interpreter waits for the next."""
        return self._done and self.alive()

    def events(self, count: int, probe_timeout: float, budget_end: float):
        """Yield ``(probe index, outcome event)`` for ``count`` probes; index -1 is the module's import failing."""
        if not self.started:
            line = self._next(time.monotonic() + START_TIMEOUT)
            if line is TimeoutError or line is None:
                return
            self.started = True
        index = -1
        while index < count:
            line = self._next(min(time.monotonic() + probe_timeout, budget_end))
            if line is TimeoutError or line is None:
                doing = "importing the module" if index < 0 else "this check"
                if line is None:
                    error = {"type": "Crash", "message": self.death_message()}
                else:
                    error = {"type": "Timeout", "message": f"{doing} did not finish within {probe_timeout:g} s (infinite loop?)"}
                yield index, {"outcome": "module_error" if index < 0 else ("crash" if line is None else "timeout"), "error": error}
                return
            try:
                event = json.loads(line)
            except ValueError:
                yield max(index, 0), {"outcome": "crash", "error": {"type": "Crash", "message": "your code wrote to the grader's channel"}}
                return
            if index < 0:
                if event.get("event") == "import_error":
                    self._done = self._next(time.monotonic() + probe_timeout) not in (None, TimeoutError)
                    yield -1, {"outcome": "module_error", "error": event.get("error", {})}
                    return
                index = 0
                continue
            yield index, ({"outcome": "error", "error": event["error"]} if "error" in event
                          else {"outcome": "ok", "value": event.get("value")})
            index += 1
        self._done = self._next(time.monotonic() + probe_timeout) not in (None, TimeoutError)  # its "finished"

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
        for dependency, path in task["uses"].items():
            worker.load_reference(dependency, path)
        probes_module = worker.load_probes(task["stem"], task["probes_file"])
        worker.run(channel, task["stem"], task["sandbox_dir"], probes_module, task["probes"], steps=task["steps"])
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
