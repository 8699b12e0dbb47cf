"""A clean interpreter that imports torch once and forks one sandboxed worker per module.

Started by ``client.Sandbox`` with ``python -I zygote.py SOCKET GRADER_PID [many]`` and an empty environment,
so it holds no secret, no expected value and no report path: a worker forked from it
inherits nothing worth stealing. Each connection on SOCKET carries one plan (one
submission); a forked handler runs that plan's modules, ``workers`` at a time, and streams
one JSON line per probe back. Each module has a supervisor process that loads its probes,
builds a ``confine.Box`` (namespaces, when :func:`confine.probe` found them working at start)
and runs the module's workers in it.
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import socket
import sys
import time

if __name__ == "__main__":  # started by path with -I: make the grader package importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from grader import probing  # noqa: E402
from grader.sandbox import confine, hugepages, linux, syscall_filter, wire, worker  # noqa: E402

ISOLATION = confine.NAMESPACES  # what confine.probe() found when the zygote started


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
    warm_up()
    gc.freeze()  # every handler, supervisor and worker is a fork of this: their collections leave these pages shared
    if many:  # their forks then copy 512 times fewer page-table entries, for a one-off ~0.3 s
        hugepages.collapse()
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
    """Run one plan: read it, run every module, stream results, then say ``done``."""
    stream = conn.makefile("rwb")
    plan = json.loads(stream.readline())
    emit = lambda event: (stream.write(json.dumps(event).encode() + b"\n"), stream.flush())  # noqa: E731
    groups = module_groups(plan)
    running: dict[int, tuple] = {}  # pid -> (stems, supervisor pipe)
    while groups or running:
        while groups and len(running) < plan["limits"]["workers"]:
            group = groups.pop(0)
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(read_end)
                linux.die_with_parent()
                with os.fdopen(write_end, "w") as out:
                    for event in supervise_group(plan, group):
                        out.write(json.dumps(event) + "\n")
                os._exit(0)
            os.close(write_end)
            running[pid] = (group, os.fdopen(read_end, "r"))
        # Relay one finished supervisor at a time, in whatever order they finish.
        ready, _, _ = select.select([pipe for _, pipe in running.values()], [], [])
        for pid, (_stem, pipe) in list(running.items()):
            if pipe in ready:
                for line in pipe:
                    stream.write(line.encode())
                stream.flush()
                pipe.close()
                os.waitpid(pid, 0)
                del running[pid]
                break
    emit({"event": "done"})


def module_groups(plan: dict) -> list[list[tuple[str, dict]]]:
    """The plan's modules in groups, each run in turn by one supervisor in one Box.

    With several workers at a time, a group per module (modules run side by side). With one,
    as few groups as can be: the namespaces and root are then built once per group, not once
    per module. A module never shares a group with a module that uses its reference (the
    reference is loaded in the group's supervisor: it must not be there when the student's
    own version of that module is graded).
    """
    modules = list(plan["modules"].items())
    if plan["limits"]["workers"] != 1:
        return [[module] for module in modules]
    groups: list[list[tuple[str, dict]]] = []
    for stem, spec in modules:
        for group in groups:
            stems = {s for s, _ in group} | {stem}
            references = {dep for _, sp in group for dep in sp.get("uses", {})} | set(spec.get("uses", {}))
            if not stems & references:
                group.append((stem, spec))
                break
        else:
            groups.append([(stem, spec)])
    return groups


def supervise_group(plan: dict, group: list[tuple[str, dict]]):
    """Load every module's probes and references, build one Box, run the modules in turn; yield events."""
    prepared = [(stem, spec, *prepare(stem, spec)) for stem, spec in group]  # before the box: our files are readable only here
    box = confine.Box(plan["limits"], plan["sandbox_dir"], ISOLATION)
    try:
        for stem, spec, probes_module, references in prepared:
            yield from supervise(plan, stem, spec, box, probes_module, references)
    finally:
        box.close()


def supervise(plan: dict, stem: str, spec: dict, box: confine.Box, probes_module, references: dict):
    """Run ``stem``'s probes in workers in ``box``, restarting after a hang or crash; yield events."""
    limits = plan["limits"]
    probes = spec["probes"]
    budget_end = time.monotonic() + limits["module_budget"]
    box.new_output()
    yield {"module": stem, "event": "isolation", "mode": box.mode}

    def run(channel, base: int) -> None:  # in the worker: the references this module builds on, under their stems
        sys.modules.update(references)
        worker.run(channel, stem, plan["sandbox_dir"], probes_module, probes[base:], steps=plan.get("steps", True))

    next_probe = 0
    while next_probe < len(probes) and time.monotonic() < budget_end:
        base = next_probe
        proc = box.spawn(lambda channel, base=base: run(channel, base))
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
    for probe in probes[next_probe:]:
        error = {"message": f"not run: {stem}.py used up its {limits['module_budget']:g} s time budget"}
        yield {"module": stem, "id": probe["id"], "outcome": "timeout", "error": error}
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
