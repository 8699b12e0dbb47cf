"""A student's own machine: the same plans as the sandbox, with no fork, namespaces, prctl or root.

``python -m grader check`` (and plain ``pytest`` in a template) run the public tests on the
student's own code, on Linux, macOS or Windows. There is nothing to protect there, so
:class:`LocalRunner` confines nothing. It spawns interpreters (``python -I local_interpreter.py``,
the same on every OS: :mod:`grader.sandbox.local_interpreter`), ``workers`` of them, each
importing torch once and then running one module after another with
:func:`grader.sandbox.worker.run`, forgetting every module the last one loaded. This process
times every line an interpreter sends; after a hang or a crash it ends that interpreter and
continues at the next probe in a fresh one. The outcomes are the sandbox's: ok, error,
timeout, crash, module_error.
"""

from __future__ import annotations

import dataclasses
import os
import queue
import sys
import tempfile
import threading
import time
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from grader.sandbox import probe_loop
from grader.sandbox.local_interpreter import Interpreter
from grader.sandbox.protocol import CRASH, ModulePlan, Plan

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
        self._idle: list[Interpreter] = [Interpreter(self.root) for _ in range(max(1, workers))]
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

    def _take(self, run: "_Run") -> "Interpreter | None":
        with self._lock:
            if not self._idle:
                return None
            child = self._idle.pop()
        run.add(child)
        return child

    def _give_back(self, child: "Interpreter | None", run: "_Run") -> None:
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

    def _retire(self, child: "Interpreter", run: "_Run") -> None:
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
        self.busy: set[Interpreter] = set()
        self.lock = threading.Lock()

    def add(self, child: "Interpreter") -> None:
        with self.lock:
            self.busy.add(child)

    def discard(self, child: "Interpreter") -> None:
        with self.lock:
            self.busy.discard(child)

    def start(self, root: Path) -> "Interpreter | None":
        """A fresh interpreter at work for this plan; None once the plan is stopped (none starts then)."""
        with self.lock:
            if self.stopping.is_set():
                return None
            child = Interpreter(root)
            self.busy.add(child)
            return child

    def stop(self) -> None:
        """End this plan's interpreters at work (their threads then end at once) and start none."""
        with self.lock:
            self.stopping.set()
            children = list(self.busy)
        for child in children:
            child.stop()
