"""A clean interpreter that imports torch once and forks one sandboxed worker per module.

Started by ``client.Sandbox`` with ``python -I zygote.py SOCKET GRADER_PID [many]`` and an
environment of its own (every accelerator hidden, :mod:`grader.accelerators`: its warm-up's
backward pass then starts no device threads, beside which its forked workers could not run
backward), so it holds no secret, no expected value and no report path: a worker forked from it
inherits nothing worth stealing. Each connection on SOCKET carries the plans of one
submission (its graded run, then its diagnosis's re-run), one at a time; a forked handler waits for its turn (the workers of one plan at a time: :func:`turn`),
then runs that plan's modules in phases (:func:`phases`), ``workers`` at a time, and streams
one JSON line per probe back. Each group of modules has a supervisor process that loads their
probes and references, builds a ``confine.Box`` (namespaces, when :func:`confine.probe` found
them working at start) and runs the modules' workers in it.
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
    gc.freeze()  # every handler, supervisor and worker is a fork of this: their collections leave these pages shared
    if many:  # their forks then copy 512 times fewer page-table entries, for a one-off ~0.3 s
        hugepages.collapse()
    if GUARDED:
        PINNED = pagecache.pin_mappings()  # what every worker inherits mapped stays resident
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
    """Run one plan: get its supervisors ready, wait for the sandbox's turn, run every module,
    stream results, then say ``done``.

    Each supervisor loads its probes and references and builds its box (namespaces, root, init)
    while the plan still waits for its turn, so that the turn is spent running workers; no worker
    starts before the turn is this plan's (:func:`start_group`)."""
    emit = lambda event: (stream.write(json.dumps(event).encode() + b"\n"), stream.flush())  # noqa: E731
    ready = [[start_group(plan, group) for group in module_groups(phase, plan["limits"]["workers"])]
             for phase in phases(plan)]
    ended: list[int] = []
    with turn(lambda: emit({"event": "waiting"})):
        if GUARDED:  # whatever the plans before evicted of the files workers opened
            pagecache.settle()
        if GUARDED and not PINNED:  # ... and of the files every worker inherits mapped
            pagecache.resident_mappings()
        for phase in ready:  # a phase's workers hold the same references; phases run one after the other
            ended += run_phase(phase, stream)
    emit({"event": "done"})
    for pid in ended:  # every box is closed: only the supervisors' own teardown is left
        os.waitpid(pid, 0)


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


def start_group(plan: dict, group: list[tuple[str, dict]]) -> tuple[int, int, object]:
    """Fork the supervisor of ``group``: it loads the probes and references and builds its box at
    once, then waits for a byte on its go pipe before it starts any worker (none if the pipe closes
    first). Return its pid, the go pipe's write end and the pipe its events come on."""
    read_end, write_end = os.pipe()
    go_read, go_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            os.close(go_write)
            linux.die_with_parent()
            with os.fdopen(write_end, "w") as out:
                for event in supervise_group(plan, group, lambda: os.read(go_read, 1) == b"g"):
                    out.write(json.dumps(event) + "\n")
        finally:
            os._exit(0)
    os.close(write_end)
    os.close(go_read)
    return pid, go_write, os.fdopen(read_end, "r")


def run_phase(groups: list[tuple[int, int, object]], stream) -> list[int]:
    """Let one phase's supervisors (:func:`start_group`) start their workers, side by side, and
    relay each supervisor's events as it ends. A supervisor's pipe ends once its box is closed
    (everything left in its PID namespace killed), before the process itself has ended: return the
    pids to reap, so that its teardown overlaps the next phase instead of delaying it."""
    running: dict[int, object] = {}
    for pid, go, pipe in groups:
        with contextlib.suppress(OSError):  # a supervisor that failed before: its probes get no result
            os.write(go, b"g")
        os.close(go)
        running[pid] = pipe
    ended = []
    while running:  # relay one finished supervisor at a time, in whatever order they finish
        ready, _, _ = select.select(list(running.values()), [], [])
        for pid, pipe in list(running.items()):
            if pipe in ready:
                for line in pipe:
                    stream.write(line.encode())
                stream.flush()
                pipe.close()
                ended.append(pid)
                del running[pid]
                break
    return ended


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
    """A phase's modules in at most ``workers`` groups, each run in turn by one supervisor in one Box
    (the namespaces and root are built once per group, not once per module). No module of a phase
    is the reference of another (that one's phase would be later), so any grouping keeps a module
    away from its own reference: the supervisor, which loads the group's references, never holds it.
    A worker forked from it holds the references of its whole group, which lie within its phase."""
    count = max(1, min(workers, len(phase)))
    return [phase[start::count] for start in range(count)]


def supervise_group(plan: dict, group: list[tuple[str, dict]], go=lambda: True):
    """Load every module's probes and references, build one Box and fork the first module's first
    worker, which confines itself and waits; once ``go()`` says so (the plan's turn has come), let
    it run and run the modules in turn; yield events."""
    prepared = [(stem, spec, *prepare(stem, spec)) for stem, spec in group]  # before the box: our files are readable only here
    box = confine.Box(plan["limits"], plan["sandbox_dir"], ISOLATION)
    first = None
    try:
        if prepared and prepared[0][1]["probes"]:
            stem, spec, probes_module, references = prepared[0]
            box.new_output()
            gate, release = os.pipe()
            first = (box.spawn(lambda channel: run_worker(plan, stem, probes_module, references, 0, channel), gate=gate),
                     release)
            os.close(gate)
        if not go():
            return
        for index, (stem, spec, probes_module, references) in enumerate(prepared):
            ready = first if index == 0 else None
            yield from supervise(plan, stem, spec, box, probes_module, references, ready)
    finally:
        box.close()


def run_worker(plan: dict, stem: str, probes_module, references: dict, base: int, channel) -> None:
    """In a worker: the references its module builds on, under their stems; then its probes from ``base`` on."""
    sys.modules.update(references)
    worker.run(channel, stem, plan["sandbox_dir"], probes_module, plan["modules"][stem]["probes"][base:],
               steps=plan.get("steps", True))


def supervise(plan: dict, stem: str, spec: dict, box: confine.Box, probes_module, references: dict, ready=None):
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
            os.write(release, b"g")
            os.close(release)
        else:
            proc = box.spawn(lambda channel, base=base: run_worker(plan, stem, probes_module, references, base, channel))
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
    """Load the reference modules ``stem`` builds on, and its probes (trusted code): return
    the probes and the references, which are taken out of ``sys.modules`` again (a worker of
    another module of the group must import its own)."""
    uses = spec.get("uses", {})
    for dependency, path in uses.items():
        worker.load_reference(dependency, path)
    probes = worker.load_probes(stem, spec["probes_file"])
    return probes, {dependency: sys.modules.pop(dependency) for dependency in uses}


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
