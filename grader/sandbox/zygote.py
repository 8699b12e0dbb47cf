"""A clean interpreter that imports torch once and forks one sandboxed worker per module.

Started by ``client.Sandbox`` with ``python -I zygote.py SOCKET GRADER_PID [many]`` and an
environment of its own (every accelerator hidden, :mod:`grader.accelerators`: its warm-up's
backward pass then starts no device threads, beside which its forked workers could not run
backward), so it holds no secret, no expected value and no report path: a worker forked from it
inherits nothing worth stealing. Each connection on SOCKET carries the plans of one
submission (its graded run, then its diagnosis's re-run), one at a time; a forked handler waits for its turn (the workers of one plan at a time: :func:`turn`),
then runs that plan's modules in phases (:func:`grader.sandbox.schedule.phases`), ``workers`` at a time, and streams
one JSON line per probe back. Each of a plan's slots (at most ``workers``) has a supervisor
process that loads its modules' probes, builds one ``confine.Box`` (namespaces, when
:func:`confine.probe` found them working at start) and runs its modules' workers in it, a group
per phase (:mod:`grader.sandbox.supervisor`); each worker loads the reference modules its module builds on.
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
from grader.sandbox import confine, hugepages, linear_layers, linux, pagecache, syscall_filter, wire, worker  # noqa: E402
from grader.sandbox.protocol import Plan  # noqa: E402
from grader.sandbox.schedule import Group, slot_schedule  # noqa: E402
from grader.sandbox.supervisor import PHASE_END, READY, Confinement, supervise_slot  # noqa: E402

CONFINEMENT = Confinement()  # what the zygote found when it started (serve)
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
    isolation = confine.probe()  # before torch: forking is cheap now
    global CONFINEMENT, GUARDED, PINNED
    # Many plans (a batch: many students): the page cache must carry nothing from one to the next.
    GUARDED = many and isolation.split("; ")[0] == confine.NAMESPACES and os.geteuid() == 0 and pagecache.start()
    CONFINEMENT = Confinement(isolation, unguarded=many and not GUARDED)
    warm_up()
    if many:  # drawn once here for a batch's many workers that read them (a single grade draws them where used)
        linear_layers.fixed_values()
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
        run_plan(Plan.from_wire(json.loads(line)), stream)


def run_plan(plan: Plan, stream) -> None:
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


class Slot:
    """The handler's side of one slot's supervisor (:func:`start_slot`)."""

    def __init__(self, pid: int, go: int, events: int):
        self.pid = pid
        self.go = go  # write end: one byte per phase lets the supervisor run that phase
        self.events = events  # read end: the supervisor's events, one JSON line each
        self.buffer = b""
        self.alive = True


def start_slot(plan: Plan, groups: list[Group]) -> Slot:
    """Fork the supervisor of one slot (:func:`grader.sandbox.supervisor.supervise_slot`): it loads its probes and builds its
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
                for event in supervise_slot(plan, groups, CONFINEMENT, lambda: os.read(go_read, 1) == b"g"):
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
    left runs any more (:func:`grader.sandbox.supervisor.supervise_slot`), so that no worker of the next phase runs beside
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


if __name__ == "__main__":
    linux.die_with_parent()  # a grader killed outright takes the sandbox with it
    if os.getppid() == int(sys.argv[2]):  # else the grader died before the line above
        serve(sys.argv[1], many=sys.argv[3:] == ["many"])
