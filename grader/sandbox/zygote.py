"""A clean interpreter that imports torch once and forks one sandboxed worker per module.

Started by ``client.Sandbox`` with ``python -I zygote.py SOCKET GRADER_PID [many]`` and an
environment of its own (every accelerator hidden, :mod:`grader.accelerators`: its warm-up's
backward pass then starts no device threads, beside which its forked workers could not run
backward), so it holds no secret, no expected value and no report path: a worker forked from it
inherits nothing worth stealing. Each connection on SOCKET carries the plans of one
submission (its graded run, then its diagnosis's re-run), one at a time; a forked handler waits for its turn (the workers of one plan at a time: :func:`turn`),
then runs that plan's modules in phases (:func:`phases`), ``workers`` at a time, and streams
one JSON line per probe back. Each of a plan's slots (at most ``workers``) has a supervisor
process that loads its modules' probes, builds one ``confine.Box`` (namespaces, when
:func:`confine.probe` found them working at start) and runs its modules' workers in it, a group
per phase (:func:`slot_schedule`); each worker loads the reference modules its module builds on.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import json
import os
import select
import signal
import socket
import sys
import threading
import time

if __name__ == "__main__":  # started by path with -I: make the grader package importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from grader.sandbox import probing  # noqa: E402
from grader.sandbox import confine, hugepages, linux, pagecache, syscall_filter, wire, worker  # noqa: E402

ISOLATION = confine.NAMESPACES  # what confine.probe() found when the zygote started
MANY = False  # whether this zygote serves many students' plans (a batch)
GUARDED = False  # whether workers find the page cache canonical (pagecache): a batch, as root, in namespaces
PINNED = False  # whether the zygote's file mappings are locked in memory (else each turn faults in what is missing)


def warm_up() -> None:
    """Import torch and run the ops every probe needs once, so forked workers start warm."""
    import torch

    torch.set_num_threads(1)
    probing.seed(0)  # finds out, once, whether there is an accelerator to seed besides the CPU
    if not syscall_filter.unavailable():
        syscall_filter.rules()  # built here once; each worker only loads it
    layer = torch.nn.Linear(3, 2)
    scores = layer(torch.rand(1, 4, 3)) @ torch.rand(1, 2, 4)
    weights = torch.softmax(scores.masked_fill(torch.ones(4, 4).triu(1).bool(), -torch.inf), dim=-1)
    torch.nn.Dropout(0.5)(weights).sum().backward()
    # The same under the step recorder every probe uses (a TorchFunctionMode and forward hooks),
    # so that each worker does not pay its first use again.
    from grader.sandbox.trace import traced

    block = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Dropout(0.1)).eval()
    steps = traced(lambda x: torch.softmax(block(x).view(1, 4, 2, 2).transpose(1, 2) / 2**0.5, dim=-1), torch.rand(1, 4, 3),
                   module=block)
    wire.dumps(worker.to_plain(steps))


def serve(path: str, many: bool = False) -> None:
    """Accept connections on ``path`` and fork a handler for each (``many``: a batch's many)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    linux.set_dumpable(False)  # no same-user ptrace or /proc peeking
    global ISOLATION
    ISOLATION = confine.probe()  # before torch: forking is cheap now
    global GUARDED, PINNED, MANY
    MANY = many
    # Many plans (a batch: many students): the page cache must carry nothing from one to the next.
    GUARDED = many and ISOLATION.split("; ")[0] == confine.NAMESPACES and os.geteuid() == 0 and pagecache.start()
    warm_up()
    if many:  # drawn once here for a batch's many workers that read them (a single grade draws them where used)
        probing.fixed_values()
    gc.freeze()  # every handler, supervisor and worker is a fork of this: their collections leave these pages shared
    if GUARDED:
        PINNED = pagecache.pin_mappings()  # what every worker inherits mapped stays resident
    # Many plans: their forks copy 512 times fewer page-table entries once this process's memory is
    # in huge pages (hugepages; up to a second of CPU on a virtual machine whose free memory the
    # host took back). A batch's first plan is the environment's check (environment.verify_sandbox):
    # its handler is forked at once, and the collapse runs while the batch, answered, collects its
    # suite; every later handler is forked after it.
    collapse_pending = many
    # Handlers are reaped as they end (not left to the kernel), so that their CPU time, and
    # their supervisors' and workers', counts in the grading run's own (benchmark_batch's CPU column).
    signal.signal(signal.SIGCHLD, reap_handlers)
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        if os.fork() == 0:
            listener.close()
            linux.die_with_parent()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                handle(conn)
            finally:
                os._exit(0)
        conn.close()
        if collapse_pending:  # after the first handler is forked, before any other
            hugepages.collapse()
            collapse_pending = False


def reap_handlers(*_) -> None:
    """SIGCHLD: reap every handler that has ended."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def handle(conn: socket.socket) -> None:
    """Run the plans of one connection (one grading process: its graded run, then its diagnosis's
    re-run), one after the other, until the client closes it (:func:`run_plan`)."""
    stream = conn.makefile("rwb")
    while line := stream.readline():
        run_plan(json.loads(line), stream)


def run_plan(plan: dict, stream) -> None:
    """Run one plan: get its slots ready, wait for the sandbox's turn, run every phase, stream
    results, then say ``done``.

    Each slot's supervisor loads its probes and builds its box before the plan asks for its turn
    (:func:`wait_until_ready`), so that the turn is spent running workers, and another plan that is
    ready runs meanwhile; no worker starts before the turn is this plan's (:func:`start_slot`)."""
    emit = lambda event: (stream.write(json.dumps(event).encode() + b"\n"), stream.flush())  # noqa: E731
    heartbeat = lambda: emit({"event": "waiting"})  # noqa: E731
    schedule = slot_schedule(plan)
    slots = [start_slot(plan, groups) for groups in schedule]
    wait_until_ready(slots, heartbeat)
    with turn(heartbeat):
        if GUARDED:  # whatever the plans before evicted of the files workers opened
            pagecache.settle()
        if GUARDED and not PINNED:  # ... and of the files every worker inherits mapped
            pagecache.resident_mappings()
        for _ in range(len(schedule[0]) if schedule else 0):  # phases run one after the other
            run_phase(slots, stream)
    emit({"event": "done"})
    for slot in slots:  # every box is closed: only the supervisors' own teardown is left
        if slot.alive:
            os.close(slot.go)
            os.close(slot.events)
        os.waitpid(slot.pid, 0)


TURN = "turn.lock"  # in the zygote's private folder (its working directory): held by the plan whose workers run
HEARTBEAT = 5.0  # seconds between "waiting" events while another plan runs (the client's read timeout is longer)


@contextlib.contextmanager
def turn(waiting):
    """Hold the sandbox for one plan: no worker of another plan (another student's, in a batch) runs
    until every worker of this one has ended (see docs/threat-model.md, *Concurrency*). ``waiting()``
    is called every :data:`HEARTBEAT` seconds until the turn comes.

    A thread waits on the lock, so the turn passes the moment the last plan lets it go (polling
    left the sandbox idle for half a polling interval at every turn); this process forks nothing
    from then on (its supervisors are forked before)."""
    fd = os.open(TURN, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)  # an open file of this handler's own
    try:
        taken = threading.Event()
        threading.Thread(target=lambda: (fcntl.flock(fd, fcntl.LOCK_EX), taken.set()), daemon=True).start()
        while not taken.wait(HEARTBEAT):
            waiting()
        yield
    finally:
        os.close(fd)  # releases the lock: every box of the plan is closed (its PID namespace killed)


PHASE_END = b'{"event": "phase_end"}\n'  # a slot's last line of a phase (not relayed)
READY = b'{"event": "ready"}\n'  # a slot's first line: its box is built, its first worker waits (not relayed)


class Slot:
    """The handler's side of one slot's supervisor (:func:`start_slot`)."""

    def __init__(self, pid: int, go: int, events: int):
        self.pid = pid
        self.go = go  # write end: one byte per phase lets the supervisor run that phase
        self.events = events  # read end: the supervisor's events, one JSON line each
        self.buffer = b""
        self.alive = True


def slot_schedule(plan: dict) -> list[list[list[tuple[str, dict]]]]:
    """The plan's modules by slot, then by phase: slot ``i`` runs group ``i`` of every phase's
    :func:`module_groups` (an empty list where a phase has fewer groups). One supervisor and one
    box serve a slot across every phase, instead of one per group and phase."""
    by_phase = [module_groups(phase, plan["limits"]["workers"]) for phase in phases(plan)]
    count = max((len(groups) for groups in by_phase), default=0)
    return [[groups[i] if i < len(groups) else [] for groups in by_phase] for i in range(count)]


def start_slot(plan: dict, groups: list[list[tuple[str, dict]]]) -> Slot:
    """Fork the supervisor of one slot (:func:`supervise_slot`): it loads its probes and builds its
    box at once, then runs one phase's group for each byte on its go pipe (none, and nothing more,
    once the pipe closes)."""
    read_end, write_end = os.pipe()
    go_read, go_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            os.close(go_write)
            linux.die_with_parent()
            with os.fdopen(write_end, "wb") as out:
                for event in supervise_slot(plan, groups, lambda: os.read(go_read, 1) == b"g"):
                    marker = isinstance(event, bytes)  # READY or PHASE_END: a line of its own, said at once
                    out.write(event if marker else json.dumps(event).encode() + b"\n")
                    if marker:
                        out.flush()
        finally:
            os._exit(0)
    os.close(write_end)
    os.close(go_read)
    return Slot(pid, go_write, read_end)


READY_WITHIN = 3 * confine.PREPARING  # seconds a plan waits for its slots before it asks for the turn all the same


def wait_until_ready(slots: list[Slot], waiting) -> None:
    """Wait until every slot has said :data:`READY` (or ended: a failed supervisor, which
    :func:`run_phase` finds), calling ``waiting()`` every :data:`HEARTBEAT` seconds meanwhile, for
    at most :data:`READY_WITHIN` seconds (then the plan goes on, as it did before it waited: a
    slot that says it later is heard in its phase). What a slot sends after it stays in its
    buffer for :func:`run_phase`."""
    now = time.monotonic()
    end, beat = now + READY_WITHIN, now + HEARTBEAT
    said = {slot.events: b"" for slot in slots}
    pending = set(said)
    while pending and (now := time.monotonic()) < end:
        if now >= beat:
            waiting()
            beat = now + HEARTBEAT
        for fd in select.select(list(pending), [], [], min(beat, end) - now)[0]:
            chunk = os.read(fd, 1 << 16)
            said[fd] += chunk
            if not chunk or READY in said[fd]:
                pending.discard(fd)
    for slot in slots:
        slot.buffer = said[slot.events].replace(READY, b"", 1)


def run_phase(slots: list[Slot], stream) -> None:
    """Let every slot run its group of the next phase, side by side, and relay their events as
    they come, until each has said the phase is over: its workers have ended and nothing they
    left runs any more (:func:`supervise_slot`), so that no worker of the next phase runs beside
    anything of this one. A slot whose pipe ends (its last phase is over, or it failed) is done."""
    waiting = {}
    for slot in slots:
        if not slot.alive:
            continue
        try:
            os.write(slot.go, b"g")
        except OSError:  # its supervisor ended (it failed before: its probes get no result)
            slot.alive = False
            os.close(slot.go)
            os.close(slot.events)
            continue
        waiting[slot.events] = slot
    while waiting:
        ready, _, _ = select.select(list(waiting), [], [])
        for fd in ready:
            slot = waiting[fd]
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                slot.alive = False
                os.close(slot.go)
                os.close(fd)
                del waiting[fd]
                continue
            *lines, slot.buffer = (slot.buffer + chunk).split(b"\n")
            for line in lines:
                if line + b"\n" == PHASE_END:
                    del waiting[fd]
                elif line + b"\n" != READY:  # said after wait_until_ready gave up waiting
                    stream.write(line + b"\n")
        stream.flush()


def phases(plan: dict) -> list[list[tuple[str, dict]]]:
    """The plan's modules in phases, run one after the other: a module's phase (``phase``, from the
    rubric: :meth:`grader.rubric.Rubric.phase`) comes after the phase of every module it uses, so
    the modules that hold no reference come first (a plan without it: the number of references it
    holds, which also grows along ``uses``, every module below it being listed).

    Workers of one phase may run side by side; no two workers of different phases ever do. So a
    worker that holds a reference (mha's, with the reference causal) never runs beside, nor before,
    the worker of the module it answers (causal), nor beside any worker of an earlier phase
    (self_attention_v2, which a masked-off causal attention would answer). It may run beside a
    worker of its own phase that holds other references (ch03: weight_transfer's, with the two
    self-attention classes): each could learn the other's, whose own modules have run already in
    this plan (docs/threat-model.md, *Phases*).
    """
    by_phase: dict[int, list[tuple[str, dict]]] = {}
    for stem, spec in plan["modules"].items():
        by_phase.setdefault(int(spec.get("phase", len(spec.get("uses", {})))), []).append((stem, spec))
    return [by_phase[key] for key in sorted(by_phase)]


def module_groups(phase: list[tuple[str, dict]], workers: int) -> list[list[tuple[str, dict]]]:
    """A phase's modules in at most ``workers`` groups, each run in turn in one slot's Box (the
    namespaces and root are built once per slot, not once per module, :func:`slot_schedule`). No
    supervisor loads a reference: a worker loads its own module's alone (:func:`load_references`)."""
    count = max(1, min(workers, len(phase)))
    return [phase[start::count] for start in range(count)]


def supervise_slot(plan: dict, groups: list[list[tuple[str, dict]]], go=lambda: True):
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
    prepared = {}
    for group in groups:
        for stem, spec in group:
            try:
                prepared[stem] = prepare(stem, spec)  # before the box: the files are readable only now
            except Exception:  # noqa: BLE001 - the grader's failure: this module's probes get no result
                prepared[stem] = None
    box = confine.Box(plan["limits"], plan["sandbox_dir"], ISOLATION)
    closed = False

    def first_worker(phase: int, clearing: bool):
        """The first worker of ``groups[phase]``, forked and waiting; None if its module has nothing
        to run (then, when ``clearing``, a worker that only clears the box has come and gone).
        ``clearing``: raise OSError if the worker was lost before it had cleared the box."""
        stem, spec = groups[phase][0]
        if not spec["probes"] or prepared[stem] is None:
            proc = box.spawn(lambda channel: None) if clearing else None
            if proc is not None:
                proc.finish()
                if proc.prepared == "lost":
                    raise OSError("a worker was lost before it had cleared the box")
            return None
        probes_module, references = prepared[stem]
        box.new_output()
        gate, release = os.pipe()
        proc = box.spawn(lambda channel: run_worker(plan, stem, probes_module, 0, channel), gate=gate,
                         before=lambda: load_references(spec, references))
        os.close(gate)
        if clearing and proc.prepared == "lost":
            os.close(release)
            raise OSError("a worker was lost before it had cleared the box")
        return proc, release

    ready = None
    try:
        later = [k for k, group in enumerate(groups) if group]
        ready = first_worker(later[0], clearing=False) if later else None
        yield READY
        for phase, group in enumerate(groups):
            if not go():
                return
            for stem, spec in group:
                first, ready = ready, None  # supervise closes its release pipe: never this function again
                if prepared[stem] is not None:
                    probes_module, references = prepared[stem]
                    yield from supervise(plan, stem, spec, box, probes_module, references, first)
                elif first is not None:
                    os.close(first[1])
            following = [k for k in later if k > phase]
            if not following:
                if not closed:
                    box.close()
                    closed = True
            elif ready is None:  # this phase ran here: the next worker kills what it left first
                ready = first_worker(following[0], clearing=True)
            yield PHASE_END
    finally:
        if ready is not None:
            os.close(ready[1])
        if not closed:
            box.close()


def run_worker(plan: dict, stem: str, probes_module, base: int, channel) -> None:
    """In a worker: ``stem``'s probes from ``base`` on (its references are loaded, :func:`load_references`)."""
    worker.run(channel, stem, plan["sandbox_dir"], probes_module, plan["modules"][stem]["probes"][base:],
               steps=plan.get("steps", True))


def load_references(spec: dict, references: dict[str, int]) -> None:
    """In a new worker, before it is confined: the reference modules its module builds on, read
    from the descriptors :func:`prepare` opened, under their stems (in order: a later one may
    import an earlier one)."""
    for dependency, path in spec.get("uses", {}).items():
        worker.load_reference_from(dependency, path, references[dependency])


LOST = {"type": "Crash", "message": "the process that was to run your code was stopped or killed before it could "
                                  "start (by a process your code left running?)"}


def supervise(plan: dict, stem: str, spec: dict, box: confine.Box, probes_module, references: dict[str, int], ready=None):
    """Run ``stem``'s probes in workers in ``box``, restarting after a hang or crash; yield events.
    ``ready``: its first worker, already forked and waiting (and its output captured anew), with
    the pipe that lets it run."""
    limits = plan["limits"]
    probes = spec["probes"]
    # A second plan for the same module (the diagnosis's re-run) carries what is left of its budget.
    budget = min(float(spec.get("budget", limits["module_budget"])), limits["module_budget"])
    started = time.monotonic()
    budget_end = started + budget
    if ready is None:
        box.new_output()
    # Many students without the page-cache guard: say so (batch refuses it, or records it with each grade).
    yield {"module": stem, "event": "isolation", "mode": box.mode if GUARDED or not MANY else f"{box.mode}; {pagecache.UNGUARDED}"}

    next_probe = 0
    while next_probe < len(probes) and time.monotonic() < budget_end:
        base = next_probe
        if ready is not None:
            proc, release = ready
            ready = None
            if proc.prepared == "ok":
                os.write(release, b"g")
            os.close(release)
        else:
            proc = box.spawn(lambda channel, base=base: run_worker(plan, stem, probes_module, base, channel),
                             before=lambda: load_references(spec, references))
        if proc.prepared != "ok":  # ended already (Box.spawn)
            if proc.prepared == "lost":
                for probe in probes[base:]:
                    yield {"module": stem, "id": probe["id"], "outcome": "module_error", "error": LOST}
            next_probe = len(probes)  # "unloaded": its references did not load, the grader's failure: no result
            box.sweep()
            break
        for event in watch(proc, limits, budget_end, len(probes) - base):
            if event["outcome"] == "module_error":
                for probe in probes[base:]:
                    yield {"module": stem, "id": probe["id"], **event}
                next_probe = len(probes)
            elif event["outcome"] != "ready":
                index = event.pop("index")
                yield {"module": stem, "id": probes[base + index]["id"], **event}
                next_probe = base + index + 1
        proc.finish()
        box.sweep()
    if ready is not None:  # no time left to run it (a re-run's budget): it ends without running anything
        os.close(ready[1])
        ready[0].finish()
    for probe in probes[next_probe:]:
        error = {"message": f"not run: {stem}.py used up its {limits['module_budget']:g} s time budget"}
        yield {"module": stem, "id": probe["id"], "outcome": "timeout", "error": error}
    yield {"module": stem, "event": "spent", "seconds": min(time.monotonic() - started, budget)}
    yield {"module": stem, "event": "output", "text": box.output.text()}


def prepare(stem: str, spec: dict):
    """Load ``stem``'s probes (trusted code, no expected value in them) and open, without reading
    them, the reference modules it builds on: return the probes and a descriptor per reference,
    which only a worker of ``stem`` reads (:func:`load_references`; every worker closes the
    descriptors it inherits before student code runs, ``capture.keep_only_channel``)."""
    references = {dependency: os.open(path, os.O_RDONLY | os.O_CLOEXEC) for dependency, path in spec.get("uses", {}).items()}
    return worker.load_probes(stem, spec["probes_file"]), references


def watch(proc, limits: dict, budget_end: float, count: int):
    """Yield one outcome per event of a running worker, enforcing the probe deadlines."""
    index = -1  # -1 while the module is being imported
    buffer = b""
    while index < count:
        deadline = min(time.monotonic() + limits["probe_timeout"], budget_end)
        line = None
        while line is None:
            if b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                break
            left = deadline - time.monotonic()
            ready, _, _ = select.select([proc.channel] + ([proc.output] if proc.output is not None else []), [], [],
                                        max(left, 0))
            if proc.output is not None and proc.output in ready:
                proc.drain()
                if proc.channel not in ready and time.monotonic() < deadline:
                    continue
            if proc.channel not in ready:
                what = "importing the module" if index < 0 else "this check"
                error = {"message": f"{what} did not finish within {limits['probe_timeout']:g} s (infinite loop?)"}
                if index < 0:
                    yield {"outcome": "module_error", "error": {**error, "type": "Timeout"}}
                else:
                    yield {"outcome": "timeout", "index": index, "error": error}
                return
            chunk = os.read(proc.channel, 1 << 16)
            if not chunk:
                error = {"message": proc.death_message(), "type": "Crash"}
                if index < 0:
                    yield {"outcome": "module_error", "error": error}
                else:
                    yield {"outcome": "crash", "index": index, "error": error}
                return
            buffer += chunk
            if len(buffer) > wire.MAX_LINE:
                yield {"outcome": "crash", "index": max(index, 0),
                       "error": {"message": "your code sent more data than the grader accepts", "type": "Crash"}}
                return
        try:
            event = wire.parse_line(line)
            kind = event["event"]
        except (wire.WireError, KeyError, TypeError):
            yield {"outcome": "crash", "index": max(index, 0),
                   "error": {"message": "your code interfered with the grader's channel", "type": "Crash"}}
            return
        if index < 0:
            if kind == "import_error":
                yield {"outcome": "module_error", "error": event.get("error")}
                return
            yield {"outcome": "ready"}
        elif "error" in event:
            yield {"outcome": "error", "index": index, "error": event["error"]}
        else:
            yield {"outcome": "ok", "index": index, "value": event.get("value")}
        index += 1


if __name__ == "__main__":
    linux.die_with_parent()  # a grader killed outright takes the sandbox with it
    if os.getppid() == int(sys.argv[2]):  # else the grader died before the line above
        serve(sys.argv[1], many=sys.argv[3:] == ["many"])
