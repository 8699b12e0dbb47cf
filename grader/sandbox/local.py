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

import dataclasses
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

if __name__ == "__main__":  # started by path with -I: make the grader package importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from grader import accelerators  # noqa: E402 - the standard library only
from grader.sandbox import probe_loop, wire  # noqa: E402 - the standard library only
from grader.sandbox.protocol import CRASH, ModulePlan, Plan  # noqa: E402 - the standard library only

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
        self._lock = threading.Lock()  # plans may share the runner (environment.verified runs its self-test beside)

    def new_submission_dir(self) -> Path:
        """A fresh folder to copy one submission into."""
        return Path(tempfile.mkdtemp(prefix="submission-", dir=self.root))

    def run(self, plan: Plan, timeout: float):
        """Run every module of ``plan``, ``workers`` interpreters at a time; return a ``PlanResult``.
        A plan that has not been heard from for ``timeout`` seconds (no outcome came) is stopped
        (its interpreters ended) and raises ``SandboxError``, as the sandbox's silence does."""
        from grader.sandbox.client import PlanResult, SandboxError, complete, decode_outcome

        run = _Run()  # this plan's interpreters and its stop: another plan sharing the runner keeps its own
        pending: queue.Queue = queue.Queue()
        for item in plan.modules.items():
            pending.put(item)

        def drain() -> list[tuple[str, list[dict], str]]:
            done, child = [], self._take(run)
            while not run.stopping.is_set():
                try:
                    stem, module = pending.get_nowait()
                except queue.Empty:
                    break
                events, output, child = self._run_module(plan, stem, module, child, run)
                done.append((stem, events, output))
            self._give_back(child, run)
            return done

        workers = max(1, min(plan.limits.workers, len(plan.modules)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            running = [pool.submit(drain) for _ in range(workers)]
            while futures.wait(running, timeout=max(0.0, run.last_heard + timeout - time.monotonic())).not_done:
                if time.monotonic() - run.last_heard >= timeout:
                    run.stop()
                    raise SandboxError(f"the sandbox did not answer within {timeout:g} s")
        result = PlanResult()
        for stem, events, output in (item for done in running for item in done.result()):
            result.isolation[stem] = MODE
            result.output[stem] = output
            for event in events:
                if event.get("event") == "spent":
                    result.spent[stem] = event["seconds"]
                else:
                    result.outcomes[event["id"]] = decode_outcome(event)
        return complete(plan, result)  # as the sandbox: a probe without an outcome gets one that says so

    def _take(self, run: "_Run") -> "_Child | None":
        with self._lock:
            if not self._idle:
                return None
            child = self._idle.pop()
        run.add(child)
        return child

    def _give_back(self, child: "_Child | None", run: "_Run") -> None:
        if child is not None:
            run.discard(child)
            with self._lock:
                self._idle.append(child)

    def _run_module(self, plan: Plan, stem: str, module: ModulePlan, child, run: "_Run"):
        """Run one module's probes (:func:`grader.sandbox.probe_loop.run_module`); return its
        events, its output and the interpreter to reuse (or None)."""
        limits = plan.limits
        output = b""
        current = [child]

        def attempt(base: int, budget_end: float):
            """An interpreter (the last one, if it is still waiting) on the probes from ``base`` on."""
            nonlocal output
            if run.stopping.is_set():
                return
            child = current[0]
            if child is None or not child.alive():
                if child is not None:
                    self._retire(child, run)
                child = run.start(self.root)
                if child is None:  # the plan was stopped meanwhile
                    return
            captured = Path(tempfile.mkstemp(prefix=f"{stem}-", suffix=".out", dir=self.root)[1])
            child.send({"stem": stem, "sandbox_dir": plan.sandbox_dir, "output": str(captured), "steps": plan.steps,
                        "module": dataclasses.replace(module, probes=module.probes[base:]).to_wire()})
            if child.started_within(START_TIMEOUT):
                ended = yield from probe_loop.outcomes(child.next_line, child.death_message, limits.probe_timeout,
                                                       budget_end, len(module.probes) - base)
                child.done = ended and child.next_line(time.monotonic() + limits.probe_timeout) not in (
                    probe_loop.TIMED_OUT, probe_loop.ENDED)  # its "finished"
            else:
                yield probe_loop.WHOLE_MODULE, {"outcome": "module_error", "error": probe_loop.error(
                    CRASH, "Python could not start the check (see the output)")}
            if not child.finished():  # it hung, crashed or never started: a fresh one goes on
                self._retire(child, run)
                child = None
            current[0] = child
            output += captured.read_bytes()[: limits.output_chars * 4]

        events = []
        for event in probe_loop.run_module(module, limits, stem, attempt):
            run.last_heard = time.monotonic()
            events.append(event)
        from grader.hygiene import clean

        return events, clean(output, limits.output_chars, one_line=False), current[0]

    def _retire(self, child: "_Child", run: "_Run") -> None:
        child.stop()
        run.discard(child)

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


class _Run:
    """One plan's interpreters at work, when it was last heard from, and whether it was stopped
    (silent past its timeout)."""

    def __init__(self):
        self.stopping = threading.Event()
        self.last_heard = time.monotonic()  # when its last outcome came (the timeout is on silence, as the sandbox's)
        self.busy: set[_Child] = set()
        self.lock = threading.Lock()

    def add(self, child: "_Child") -> None:
        with self.lock:
            self.busy.add(child)

    def discard(self, child: "_Child") -> None:
        with self.lock:
            self.busy.discard(child)

    def start(self, root: Path) -> "_Child | None":
        """A fresh interpreter at work for this plan; None once the plan is stopped (none starts then)."""
        with self.lock:
            if self.stopping.is_set():
                return None
            child = _Child(root)
            self.busy.add(child)
            return child

    def stop(self) -> None:
        """End this plan's interpreters at work (their threads then end at once) and start none."""
        with self.lock:
            self.stopping.set()
            children = list(self.busy)
        for child in children:
            child.stop()


class _Child:
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
