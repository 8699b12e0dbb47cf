"""One Box for several modules of a submission: the
namespaces and root are built once per slot, for every phase, and what isolates one module from
the next must still hold (grader/sandbox/zygote.py: phases, module_groups, slot_schedule,
rootfs.renew_scratch); a worker holds its own module's references alone."""

from __future__ import annotations

import os
import subprocess

from grader.sandbox.protocol import ModulePlan, Plan
from grader.sandbox.schedule import module_groups, phases, slot_schedule
from grader.settings import Settings
from project_tests.adversarial.grader_runs import require_isolation
from project_tests.helpers import PYTHON, ROOT, exercise, grade_cli, make_submission, solution_sources


def plan(modules: dict[str, list[str]], workers: int) -> Plan:
    rubric = {stem: uses for stem, uses in modules.items()}
    phase = lambda stem: max((phase(dep) + 1 for dep in rubric[stem]), default=0)  # noqa: E731 - Rubric.phase's rule
    return Plan("/x", {stem: ModulePlan(f"/probes/{stem}.py", {dep: f"/solutions/{dep}.py" for dep in uses}, phase(stem), [])
                       for stem, uses in modules.items()}, Settings(workers=workers).sandbox_limits())


CH03 = {"simple_attention": [], "self_attention_v1": [], "self_attention_v2": [],
        "weight_transfer": ["self_attention_v1", "self_attention_v2"], "causal": [], "mha": ["causal"]}
D2L = {"masked_softmax": [], "scoring": ["masked_softmax"], "positional_encoding": [],
       "multihead": ["masked_softmax", "scoring"], "seq2seq_attention": ["masked_softmax", "scoring"]}


def stems(groups) -> list[list[str]]:
    return [[stem for stem, _ in group] for group in groups]


def test_a_module_runs_in_a_phase_after_every_module_it_uses_those_without_references_first():
    assert stems(phases(plan(CH03, workers=2))) == [
        ["simple_attention", "self_attention_v1", "self_attention_v2", "causal"], ["weight_transfer", "mha"]]
    assert stems(phases(plan(D2L, workers=2))) == [
        ["masked_softmax", "positional_encoding"], ["scoring"], ["multihead", "seq2seq_attention"]]
    for modules in (CH03, D2L):
        ran: set[str] = set()
        for phase in phases(plan(modules, workers=2)):
            held = {dep for _, module in phase for dep in module.uses}
            assert held <= ran  # every reference held answers a module that has run already
            ran |= {stem for stem, _ in phase}


def test_the_rubric_gives_the_plan_each_module_s_phase():
    from grader.rubric import load
    from project_tests.helpers import ROOT

    for assignment, modules in (("ch03", CH03), ("d2l_attention", D2L)):
        rubric = load(ROOT / "tests" / assignment, assignment)
        expected = plan(modules, workers=2).modules
        assert {e.name: rubric.phase(e.name) for e in rubric.exercises} == {stem: m.phase for stem, m in expected.items()}


def test_one_worker_at_a_time_runs_a_phase_in_one_box_and_several_split_it():
    first = phases(plan(CH03, workers=1))[0]
    assert stems(module_groups(first, 1)) == [["simple_attention", "self_attention_v1", "self_attention_v2", "causal"]]
    assert stems(module_groups(first, 2)) == [["simple_attention", "self_attention_v2"], ["self_attention_v1", "causal"]]
    assert stems(module_groups(first, 8)) == [[stem] for stem in stems([first])[0]]


def test_a_slot_runs_group_i_of_every_phase_in_one_box():
    ch03 = [stems(slot) for slot in slot_schedule(plan(CH03, workers=2))]
    assert ch03 == [[["simple_attention", "self_attention_v2"], ["weight_transfer"]],
                    [["self_attention_v1", "causal"], ["mha"]]]
    d2l = [stems(slot) for slot in slot_schedule(plan(D2L, workers=2))]
    assert d2l == [[["masked_softmax"], ["scoring"], ["multihead"]],
                   [["positional_encoding"], [], ["seq2seq_attention"]]]  # nothing in a phase: it waits
    assert [stems(slot) for slot in slot_schedule(plan(CH03, workers=1))] == [
        [["simple_attention", "self_attention_v1", "self_attention_v2", "causal"], ["weight_transfer", "mha"]]]
    assert slot_schedule(plan({}, workers=2)) == []


PROBING = '''
import gc, os, sys, types
print("scratch:", sorted(os.listdir("/tmp")) + sorted(os.listdir("/dev/shm")))
print("reference causal loaded:", any(isinstance(m, types.ModuleType) and m.__name__ == "causal"
                                      and getattr(m, "__file__", None) != __file__ for m in gc.get_objects()))
print("reference source kept:", bool(getattr(getattr(sys.modules.get("causal"), "__loader__", None), "source", b"")))
for folder in ("/tmp", "/dev/shm"):
    try:
        with open(os.path.join(folder, f"left-by-{__name__}"), "w") as handle:
            handle.write("x")
    except OSError:  # read-only: /tmp is no scratch folder when the grader itself lies under /tmp
        pass
'''


def test_a_module_sees_neither_what_an_earlier_module_left_in_scratch_nor_its_own_reference(tmp_path):
    require_isolation()
    sources = solution_sources("ch03")
    # One slot (--workers 1): one supervisor and one box for both phases; weight_transfer runs
    # beside mha in the second, with references of its own (the two self-attention classes).
    probing = ["causal", "self_attention_v1", "self_attention_v2", "simple_attention", "mha", "weight_transfer"]
    root = make_submission(tmp_path / "student", "ch03", {stem: PROBING + sources[stem] for stem in probing})
    proc, report = grade_cli(root, "ch03", "--workers", "1")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert report["score"] == report["max_score"]
    for stem in probing:
        output = exercise(report, stem)["output"]
        # The submission's own folder is bound again under a new /tmp when it lies there; nothing else is.
        assert "scratch:" in output and "left-by" not in output, (stem, output)
        # mha builds on it, by design; no other worker holds it, not even one forked by the same
        # supervisor in the same phase (weight_transfer) or in the phase before.
        assert f"reference causal loaded: {stem == 'mha'}" in output, (stem, output)
        assert "reference source kept: False" in output, (stem, output)  # its code, not its text to print


LEAVER = '''
import os, time
if os.fork() == 0:  # a process left behind, out of the worker's group and session
    os.setsid()
    if os.fork() == 0:
        time.sleep(120)
    os._exit(0)
'''
LISTER = '''
import os, time
end = time.monotonic() + 30  # a process killed a moment ago may still be ending (a busy machine: seconds)
while True:
    others = sorted(int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid()))
    if not others or time.monotonic() > end:
        break
    time.sleep(0.01)
print("others:", others)
'''


def test_what_a_phase_left_is_gone_before_the_next_phase_runs_in_its_slot(tmp_path):
    """causal (the first phase) leaves a process in its slot's box; when mha (the next phase, the
    same slot) runs, its PID namespace holds nothing but its init and itself."""
    require_isolation()
    sources = solution_sources("ch03")
    for workers in ("1", "2"):
        root = make_submission(tmp_path / f"student{workers}", "ch03",
                               {"causal": LEAVER + sources["causal"], "mha": LISTER + sources["mha"]})
        proc, report = grade_cli(root, "ch03", "--workers", workers)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert report["score"] == report["max_score"]
        assert "others: []" in exercise(report, "mha")["output"], (workers, exercise(report, "mha")["output"])


SPAWNING = '''
import os, signal, sys
import dataclasses
from grader.sandbox import confine
confine.PREPARING = 5.0
box = confine.Box(dataclasses.replace(confine.TRIAL, output_chars=100), sys.argv[1], "no namespaces: a test")
for name, before in (("ends", lambda: os._exit(0)), ("stops", lambda: os.kill(os.getpid(), signal.SIGSTOP)),
                     ("raises", lambda: 1 / 0), ("loads", lambda: None)):
    worker = box.spawn(lambda channel: None, before=before)
    print(name, worker.prepared, worker.channel is None, worker.status is not None)
    worker.finish()
'''


def test_a_worker_lost_before_it_cleared_its_box_is_said_and_killed_and_a_failed_load_is_the_grader_s(tmp_path):
    """A new worker first kills what earlier workers of its box left, then loads its references,
    and says so before it is confined (Box.spawn): one that ends or is stopped first (by something
    left there) is "lost" and killed, and a slot whose phase it was to clear closes its box instead
    (supervise_slot); one whose references do not load is "unloaded": its probes get no result, as
    a failed supervisor's did."""
    proc = subprocess.run([PYTHON, "-c", SPAWNING, str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.stdout.splitlines() == ["ends lost True True", "stops lost True True", "raises unloaded True True",
                                        "loads ok False False"], proc.stdout + proc.stderr


def test_a_slot_says_a_phase_is_over_only_after_the_next_worker_cleared_its_box(monkeypatch):
    """The order inside a slot (supervisor.supervise_slot), with the box and the workers faked: the
    worker forked for the next phase has cleared the box before the phase is said to be over; a
    module without probes gets a worker that only clears it; a worker lost there closes the box,
    and the phase is never said to be over."""
    import pytest

    from grader.sandbox import supervisor

    log: list[str] = []
    lose: set[str] = set()

    class FakeWorker:
        def __init__(self, name: str):
            self.name, self.prepared = name, "lost" if name in lose else "ok"

        def finish(self):
            log.append(f"finish {self.name}")

    class FakeBox:
        def __init__(self, *args):
            log.append("box")

        def new_output(self):
            pass

        def spawn(self, run, gate=None, before=None):
            names = [c.cell_contents for c in run.__closure__ or () if isinstance(c.cell_contents, str)]
            log.append(f"spawn {names[0] if names else 'clearing'}")  # a module's worker closes over its stem
            return FakeWorker(names[0] if names else "clearing")

        def close(self):
            log.append("close")

    def supervise(plan, stem, box, probes_module, references, confinement, ready=None):
        if ready is not None:
            os.close(ready[1])
        log.append(f"run {stem}")
        yield {"module": stem}

    monkeypatch.setattr(supervisor.confine, "Box", FakeBox)
    monkeypatch.setattr(supervisor, "prepare", lambda stem, module: (None, {}))
    monkeypatch.setattr(supervisor, "supervise", supervise)
    module = lambda stem, probes=1: (stem, ModulePlan("", {}, 0, [{}] * probes))  # noqa: E731
    groups = [[module("a"), module("b")], [module("c", probes=0)], [], [module("d")]]
    said = {supervisor.PHASE_END: "over", supervisor.READY: "ready"}
    slot_plan = plan({}, workers=1)
    for event in supervisor.supervise_slot(slot_plan, groups, supervisor.Confinement()):
        if isinstance(event, bytes):
            log.append(said[event])
    assert log == ["box", "spawn a", "ready", "run a", "run b", "spawn clearing", "finish clearing", "over",
                   "run c", "spawn d", "over", "over", "run d", "close", "over"]
    log.clear()
    lose.add("d")
    with pytest.raises(OSError):
        for event in supervisor.supervise_slot(slot_plan, groups, supervisor.Confinement()):
            if isinstance(event, bytes):
                log.append(said[event])
    assert log == ["box", "spawn a", "ready", "run a", "run b", "spawn clearing", "finish clearing", "over",
                   "run c", "spawn d", "close"]


def test_a_plan_asks_for_its_turn_only_once_every_slot_has_its_box_and_first_worker_ready(monkeypatch):
    """zygote.run_plan: while one slot's supervisor still builds its box, another plan that is
    ready may have the sandbox; this one asks for its turn once every slot has said it is ready
    (or ended), with a heartbeat to its grading process meanwhile, and what a slot said after
    that is relayed in its phase; the READY line itself never is."""
    import json

    from grader.sandbox import zygote

    monkeypatch.setattr(zygote, "HEARTBEAT", 0.05)
    said = lambda name: zygote.READY + json.dumps({"said": name}).encode() + b"\n"  # noqa: E731
    slots = {"slow": [(1.0, said("slow"))], "quick": [(0.0, said("quick"))], "failed": None}

    def run() -> tuple[float, list]:
        start, log = _plan_with_stand_ins(monkeypatch, zygote, slots)
        heard = [event for event, _ in log if event not in ("turn", {"event": "waiting"})]
        assert sorted(json.dumps(event) for event in heard[:-1]) == sorted(
            json.dumps({"said": name}) for name in ("slow", "quick", "after go", "after go")) and heard[-1] == {"event": "done"}
        return next(when for event, when in log if event == "turn") - start, log

    waited, log = run()
    assert waited >= 1.0 and {"event": "waiting"} in [event for event, _ in log]  # the slow slot's READY came 1 s in
    # A slot that is not ready in time does not hold the plan back for ever: it asks for the turn
    # all the same, as before, and what that slot says once it is ready is heard in its phase.
    monkeypatch.setattr(zygote, "READY_WITHIN", 0.15)
    waited, _ = run()
    assert waited < 1.0


def test_a_worker_stopped_before_it_led_its_own_group_is_killed_all_the_same():
    """Worker.finish kills the worker's group, and the worker itself: one stopped before setsid
    (by something left in its box) has no group of its own yet."""
    import signal

    from grader.sandbox.capture import Capture, Worker

    channel, channel_write = os.pipe()
    output, output_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.kill(os.getpid(), signal.SIGSTOP)
        os._exit(0)
    os.close(channel_write)
    os.close(output_write)
    _, status = os.waitpid(pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status)
    worker = Worker(pid, channel, output, Capture(100))
    try:
        worker.finish()
        assert worker.status is not None and os.WIFSIGNALED(worker.status) and os.WTERMSIG(worker.status) == signal.SIGKILL
        worker.finish()  # once: a second call closes nothing again
    finally:
        if worker.status is None:  # not reaped: the pid is still the child's
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def test_a_reference_is_compiled_as_its_file_says(tmp_path):
    """Not under the worker module's own ``from __future__ import annotations``."""
    import sys

    from grader.sandbox import worker

    path = tmp_path / "annotated.py"
    path.write_text("def f(a: int) -> int:\n    return a\n")
    fd = os.open(path, os.O_RDONLY)
    try:
        worker.load_reference_from("annotated_reference", str(path), fd)
        assert sys.modules["annotated_reference"].f.__annotations__ == {"a": int, "return": int}
        assert sys.modules["annotated_reference"].__file__ == str(path)
    finally:
        os.close(fd)
        sys.modules.pop("annotated_reference", None)


def _stand_in_slot(zygote, pieces):
    """A stand-in supervisor: writes ``pieces`` ((delay, bytes) each), waits for go, ends its phase;
    ``pieces`` None: one that fails at once (its pipe ends)."""
    import json
    import time

    read_end, write_end = os.pipe()
    go_read, go_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            os.close(go_write)
            if pieces is None:
                return
            for delay, data in pieces:
                time.sleep(delay)
                os.write(write_end, data)
            os.read(go_read, 1)
            os.write(write_end, json.dumps({"said": "after go"}).encode() + b"\n" + zygote.PHASE_END)
        finally:
            os._exit(0)
    os.close(write_end)
    os.close(go_read)
    return zygote.Slot(pid, go_write, read_end)


def _plan_with_stand_ins(monkeypatch, zygote, slots: dict[str, list]) -> tuple[float, list]:
    """zygote.run_plan with a stand-in supervisor per slot; (its start, what it said and when)."""
    import contextlib
    import json
    import time

    monkeypatch.setattr(zygote, "slot_schedule", lambda plan: [[name] for name in slots])
    monkeypatch.setattr(zygote, "start_slot", lambda plan, groups: _stand_in_slot(zygote, slots[groups[0]]))
    log = []

    @contextlib.contextmanager
    def turn(waiting):
        log.append(("turn", time.monotonic()))
        yield

    class Stream:
        def write(self, data):
            log.append((json.loads(data), time.monotonic()))

        def flush(self):
            pass

    monkeypatch.setattr(zygote, "turn", turn)
    start = time.monotonic()
    zygote.run_plan(plan({}, workers=len(slots)), Stream())
    return start, log


def test_while_slots_get_ready_one_after_another_the_grading_process_hears_a_heartbeat_every_heartbeat(monkeypatch):
    """zygote.wait_until_ready keeps one heartbeat for all its slots: slots ready one after another,
    each within a heartbeat of the last, never keep the grading process without a line for longer."""
    from grader.sandbox import zygote

    beat = 1.0
    monkeypatch.setattr(zygote, "HEARTBEAT", beat)
    slots = {f"s{k}": [(0.9 * beat * (k + 1), zygote.READY)] for k in range(5)}  # ready at 0.9, 1.8, ... 4.5 s
    start, log = _plan_with_stand_ins(monkeypatch, zygote, slots)
    heard = [start] + [when for event, when in log if event != "turn"]
    # A heartbeat a second; the margin is for a busy machine (a timer kept per slot: 4.5 s of silence).
    assert max(b - a for a, b in zip(heard, heard[1:])) < 2.5 * beat, log


def test_a_ready_line_cut_by_the_end_of_the_wait_is_not_relayed(monkeypatch):
    from grader.sandbox import zygote

    monkeypatch.setattr(zygote, "HEARTBEAT", 0.05)
    monkeypatch.setattr(zygote, "READY_WITHIN", 0.2)
    half = len(zygote.READY) // 2
    _, log = _plan_with_stand_ins(monkeypatch, zygote, {"cut": [(0.0, zygote.READY[:half]), (0.4, zygote.READY[half:])]})
    assert [event for event, _ in log if event != {"event": "waiting"}] == ["turn", {"said": "after go"}, {"event": "done"}]
