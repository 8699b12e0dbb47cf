"""A slot's supervisor, in the zygote: one box for the slot's modules, a worker per module, the probe loop.

Forked by the zygote's handler for each slot of a plan (:func:`grader.sandbox.zygote.start_slot`).
It loads its modules' probes and opens their references (:func:`prepare`), builds one
``confine.Box`` for the slot, and runs each phase's group of modules when the handler says so
(:func:`supervise_slot`); each module's probes run in workers of that box, driven by the probe
loop both runners share (:func:`grader.sandbox.probe_loop.run_module`), one JSON event per probe.
"""

from __future__ import annotations

import os
import select
import time
from dataclasses import dataclass

from grader.sandbox import confine, pagecache, probe_loop, wire, worker
from grader.sandbox.protocol import CRASH, ModulePlan, Plan

PHASE_END = b'{"event": "phase_end"}\n'  # a slot's last line of a phase (not relayed)
READY = b'{"event": "ready"}\n'  # a slot's first line: its box is built, its first worker waits (not relayed)


@dataclass(frozen=True)
class Confinement:
    """What the zygote found when it started, the same for every plan it serves."""

    isolation: str = confine.NAMESPACES  # what confine.probe() found
    # Many students' plans without the page-cache guard: said with each module's isolation (batch
    # refuses it, or records it with each grade).
    unguarded: bool = False

    def mode(self, box: confine.Box) -> str:
        """How a module's workers in ``box`` are isolated, as the grade records it."""
        return f"{box.mode}; {pagecache.UNGUARDED}" if self.unguarded else box.mode


def supervise_slot(plan: Plan, groups: list[list[tuple[str, ModulePlan]]], confinement: Confinement,
                   go=lambda: True):
    """Load every module's probes and build one box for the slot; fork the first worker, which
    confines itself and waits; then, each time ``go()`` says so, run the next phase's group (the
    modules in turn) and yield :data:`PHASE_END` once nothing of that phase runs any more.

    A reference module is never loaded here: each worker loads the ones its module builds on from
    descriptors opened now (before the box hides them, :func:`prepare`), so a worker of an earlier
    phase holds none of a later phase's references. Nothing a worker leaves behind outlives the
    phase: the next worker of the box, forked at the phase's end, has killed it when ``Box.spawn``
    returns, before the supervisor yields :data:`PHASE_END`; if that worker was lost first (killed
    or stopped by what was left), or the slot has nothing more to run, the box is closed instead.
    A module that cannot be prepared (the grader's failure) gets no result, as its supervisor's
    failure gave before; the slot's other modules run."""
    return _Slot(plan, groups, confinement).run(go)


class _Slot:
    """One slot's box and its modules, prepared (:func:`supervise_slot`)."""

    def __init__(self, plan: Plan, groups: list[list[tuple[str, ModulePlan]]], confinement: Confinement):
        self.plan, self.groups, self.confinement = plan, groups, confinement
        self.prepared = {}
        for group in groups:
            for stem, module in group:
                try:
                    self.prepared[stem] = prepare(stem, module)  # before the box: the files are readable only now
                except Exception:  # noqa: BLE001 - the grader's failure: this module's probes get no result
                    self.prepared[stem] = None
        self.box = confine.Box(plan.limits, plan.sandbox_dir, confinement.isolation)
        self.closed = False

    def run(self, go):
        ready = None
        try:
            later = [k for k, group in enumerate(self.groups) if group]
            ready = self.first_worker(later[0], clearing=False) if later else None
            yield READY
            for phase, group in enumerate(self.groups):
                if not go():
                    return
                for stem, _ in group:
                    first, ready = ready, None  # supervise closes its release pipe: never this function again
                    if self.prepared[stem] is not None:
                        yield from supervise(self.plan, stem, self.box, *self.prepared[stem], self.confinement, first)
                    elif first is not None:
                        os.close(first[1])
                following = [k for k in later if k > phase]
                if not following:
                    self.close()
                elif ready is None:  # this phase ran here: the next worker kills what it left first
                    ready = self.first_worker(following[0], clearing=True)
                yield PHASE_END
        finally:
            if ready is not None:
                os.close(ready[1])
            self.close()

    def close(self) -> None:
        if not self.closed:
            self.box.close()
            self.closed = True

    def first_worker(self, phase: int, clearing: bool):
        """The first worker of ``groups[phase]``, forked and waiting, with the pipe that lets it
        run; None if its module has nothing to run (then, when ``clearing``, a worker that only
        clears the box has come and gone). ``clearing``: raise OSError if the worker was lost
        before it had cleared the box."""
        stem, module = self.groups[phase][0]
        if not module.probes or self.prepared[stem] is None:
            proc = self.box.spawn(lambda channel: None) if clearing else None
            if proc is not None:
                proc.finish()
                if proc.prepared == "lost":
                    raise OSError("a worker was lost before it had cleared the box")
            return None
        probes_module, references = self.prepared[stem]
        self.box.new_output()
        gate, release = os.pipe()
        plan = self.plan
        proc = self.box.spawn(lambda channel: run_worker(plan, stem, probes_module, 0, channel), gate=gate,
                              before=lambda: load_references(module, references))
        os.close(gate)
        if clearing and proc.prepared == "lost":
            os.close(release)
            raise OSError("a worker was lost before it had cleared the box")
        return proc, release


def run_worker(plan: Plan, stem: str, probes_module, base: int, channel) -> None:
    """In a worker: ``stem``'s probes from ``base`` on (its references are loaded, :func:`load_references`)."""
    worker.run(channel, stem, plan.sandbox_dir, probes_module, plan.modules[stem].probes[base:], steps=plan.steps)


def load_references(module: ModulePlan, references: dict[str, int]) -> None:
    """In a new worker, before it is confined: the reference modules its module builds on, read
    from the descriptors :func:`prepare` opened, under their stems (in order: a later one may
    import an earlier one)."""
    for dependency, path in module.uses.items():
        worker.load_reference_from(dependency, path, references[dependency])


def prepare(stem: str, module: ModulePlan):
    """Load ``stem``'s probes (trusted code, no expected value in them) and open, without reading
    them, the reference modules it builds on: return the probes and a descriptor per reference,
    which only a worker of ``stem`` reads (:func:`load_references`; every worker closes the
    descriptors it inherits before student code runs, ``capture.keep_only_channel``)."""
    references = {dependency: os.open(path, os.O_RDONLY | os.O_CLOEXEC) for dependency, path in module.uses.items()}
    return worker.load_probes(stem, module.probes_file), references


LOST = probe_loop.error(CRASH, "the process that was to run your code was stopped or killed before it could "
                               "start (by a process your code left running?)")


def supervise(plan: Plan, stem: str, box: confine.Box, probes_module, references: dict[str, int],
              confinement: Confinement, ready=None):
    """Run ``stem``'s probes in workers in ``box`` (:func:`grader.sandbox.probe_loop.run_module`);
    yield events. ``ready``: its first worker, already forked and waiting (and its output captured
    anew), with the pipe that lets it run."""
    module = plan.modules[stem]
    if ready is None:
        box.new_output()
    yield {"module": stem, "event": "isolation", "mode": confinement.mode(box)}
    waiting = [ready] if ready is not None else []

    def attempt(base: int, budget_end: float):
        """A worker on the probes from ``base`` on (the one waiting, first) and what it says."""
        if waiting:
            proc, release = waiting.pop()
            if proc.prepared == "ok":
                os.write(release, b"g")
            os.close(release)
        else:
            proc = box.spawn(lambda channel: run_worker(plan, stem, probes_module, base, channel),
                             before=lambda: load_references(module, references))
        if proc.prepared != "ok":  # ended already (Box.spawn); "unloaded": the grader's failure, no result
            if proc.prepared == "lost":
                yield probe_loop.WHOLE_MODULE, {"outcome": "module_error", "error": LOST}
            box.sweep()
            return
        yield from probe_loop.outcomes(_Lines(proc), proc.death_message, plan.limits.probe_timeout, budget_end,
                                       len(module.probes) - base)
        proc.finish()
        box.sweep()

    yield from probe_loop.run_module(module, plan.limits, stem, attempt)
    if waiting:  # no time left to run it (a re-run's budget): it ends without running anything
        proc, release = waiting.pop()
        os.close(release)
        proc.finish()
    yield {"module": stem, "event": "output", "text": box.output.text()}


class _Lines:
    """A worker's result channel, read line by line until a deadline (``probe_loop.outcomes``),
    draining what it prints meanwhile."""

    def __init__(self, proc):
        self.proc = proc
        self.buffer = b""

    def __call__(self, deadline: float):
        proc = self.proc
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([proc.channel] + ([proc.output] if proc.output is not None else []), [], [],
                                        max(left, 0))
            if proc.output is not None and proc.output in ready:
                proc.drain()
                if proc.channel not in ready and time.monotonic() < deadline:
                    continue
            if proc.channel not in ready:
                return probe_loop.TIMED_OUT
            chunk = os.read(proc.channel, 1 << 16)
            if not chunk:
                return probe_loop.ENDED
            self.buffer += chunk
            if len(self.buffer) > wire.MAX_LINE:
                return probe_loop.TOO_LONG
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line
