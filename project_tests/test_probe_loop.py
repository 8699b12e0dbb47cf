"""The one probe loop both runners drive (grader/sandbox/probe_loop.py) and the typed data that
crosses the border (grader/sandbox/protocol.py): deadlines, a module's budget, a fresh worker after
a hang or a crash, every timeout spelled one way, and plans that are on the wire what they were."""

from __future__ import annotations

import json
import time

from grader.sandbox import probe_loop
from grader.sandbox.protocol import (
    ErrorAccount, ModulePlan, Plan, ProbeCall, ShapeStep, parse_shapes, shapes_text, traced, unwrap,
)
from grader.settings import Settings

READY = b'{"event":"ready"}'


def result(value) -> bytes:
    return json.dumps({"event": "result", "value": value}).encode()


class Worker:
    """A stand-in worker: says ``lines`` in order (``None``: hangs from then on, ``"end"``: dies)."""

    def __init__(self, lines: list):
        self.lines = list(lines)

    def next_line(self, deadline: float):
        if not self.lines or self.lines[0] is None:
            time.sleep(max(deadline - time.monotonic(), 0))
            return probe_loop.TIMED_OUT
        line = self.lines.pop(0)
        return probe_loop.ENDED if line == "end" else line

    def death_message(self) -> str:
        return "the process running your code died from signal 9"


def run(workers: list[Worker], probes: int = 3, probe_timeout: float = 0.05, budget: float = 5.0) -> list[dict]:
    """The events of a module of ``probes`` probes, each attempt served by the next of ``workers``."""
    module = ModulePlan("probes.py", {}, 0, [ProbeCall(f"t{k}", "p", {}) for k in range(probes)])
    limits = Settings(probe_timeout=probe_timeout, module_budget=budget).sandbox_limits()
    started = []

    def attempt(base, budget_end):
        started.append(base)
        worker = workers.pop(0)
        if worker is not None:
            yield from probe_loop.outcomes(worker.next_line, worker.death_message, limits.probe_timeout, budget_end,
                                           probes - base)

    events = list(probe_loop.run_module(module, limits, "causal", attempt))
    assert events[-1]["event"] == "spent" and all(e["module"] == "causal" for e in events)
    return [(e["id"], e["outcome"], e.get("value", e.get("error"))) for e in events[:-1]], started


def test_a_hang_costs_its_probe_and_a_fresh_worker_goes_on_at_the_next():
    events, started = run([Worker([READY, result(1), None]), Worker([READY, result(3)])])
    assert started == [0, 2]
    timeout = {"type": "Timeout", "message": "this check did not finish within 0.05 s (infinite loop?)"}
    assert events == [("t0", "ok", 1), ("t1", "timeout", timeout), ("t2", "ok", 3)]


def test_every_timeout_is_spelled_the_same_an_import_s_a_probe_s_and_a_spent_budget_s():
    """One spelling: ``diagnosis.explain`` tells a timeout by its type alone (the sandbox once wrote
    none for a probe's timeout, the local runner "Timeout")."""
    hung_import, _ = run([Worker([None])], probes=2)
    assert {outcome for _, outcome, _ in hung_import} == {"module_error"}
    assert {error["type"] for _, _, error in hung_import} == {"Timeout"}
    spent, started = run([Worker([READY, result(1), None])], probes=8, probe_timeout=0.5, budget=0.3)
    assert [outcome for _, outcome, _ in spent] == ["ok", "timeout"] + ["timeout"] * 6
    assert started == [0]  # the budget ran out while the first worker hung
    assert spent[2][2] == {"type": "Timeout", "message": "not run: causal.py used up its 0.3 s time budget"}
    assert {error["type"] for _, outcome, error in spent if outcome == "timeout"} == {"Timeout"}


def test_a_worker_that_dies_or_breaks_its_channel_costs_one_probe_an_import_error_every_probe():
    died, started = run([Worker([READY, "end"]), Worker([READY, b"not json", "end"]), Worker([READY, result(2)])])
    assert started == [0, 1, 2]
    assert died == [("t0", "crash", {"type": "Crash", "message": "the process running your code died from signal 9"}),
                    ("t1", "crash", {"type": "Crash", "message": "your code interfered with the grader's channel"}),
                    ("t2", "ok", 2)]
    error = {"type": "SyntaxError", "message": "invalid syntax"}
    failed, started = run([Worker([json.dumps({"event": "import_error", "error": error}).encode()])])
    assert started == [0] and failed == [(f"t{k}", "module_error", error) for k in range(3)]
    too_long, _ = run([Worker([probe_loop.TOO_LONG]), Worker([READY, result(1), result(2)])])
    assert too_long[0] == ("t0", "crash", {"type": "Crash", "message": "your code sent more data than the grader accepts"})


def test_an_attempt_that_answers_nothing_ends_the_module_without_results():
    """The grader's failure (a worker whose references did not load): no outcome, no budget timeout;
    the client says the sandbox sent no usable result."""
    events, started = run([None, Worker([READY, result(1)])])
    assert events == [] and started == [0]


def test_a_re_run_gets_what_is_left_of_the_module_s_budget():
    limits = Settings(module_budget=30.0).sandbox_limits()
    assert ModulePlan("p.py", {}, 0, []).budget_within(limits) == 30.0
    assert ModulePlan("p.py", {}, 0, [], budget=4.5).budget_within(limits) == 4.5
    assert ModulePlan("p.py", {}, 0, [], budget=45.0).budget_within(limits) == 30.0


def test_a_plan_is_on_the_wire_what_it_was_and_reads_back_the_same():
    limits = Settings().sandbox_limits()
    module = ModulePlan("/suite/probes/mha.py", {"causal": "/solutions/causal.py"}, 1,
                        [ProbeCall("tests/test_mha.py::test_x", "forward", {"seed": 1})])
    plan = Plan("/tmp/submission", {"mha": module}, limits, steps=False)
    assert plan.to_wire() == {
        "sandbox_dir": "/tmp/submission",
        "modules": {"mha": {"probes_file": "/suite/probes/mha.py", "uses": {"causal": "/solutions/causal.py"}, "phase": 1,
                            "probes": [{"id": "tests/test_mha.py::test_x", "probe": "forward", "kwargs": {"seed": 1}}]}},
        "limits": {"probe_timeout": 5.0, "module_budget": 30.0, "memory_mb": 4096, "cpu_seconds": 60, "file_mb": 8,
                   "workers": 2, "output_chars": 2000, "sandbox_user": "nobody"},
        "steps": False}
    assert Plan.from_wire(json.loads(json.dumps(plan.to_wire()))) == plan
    again = ModulePlan.from_wire({**module.to_wire(), "budget": 2.5})
    assert again.budget == 2.5 and again.to_wire()["budget"] == 2.5


def test_an_error_keeps_only_fields_of_their_type():
    """What a worker sends is the student's to forge: a field of another type is left out."""
    sent = {"type": "RuntimeError", "message": "boom", "where": 3, "not_attempted": 1, "grader_fault": True,
            "shapes": "0:x|2@a.py:1/0<", "unknown": "x"}
    assert ErrorAccount.from_wire(sent) == ErrorAccount("RuntimeError", "boom", grader_fault=True, shapes="0:x|2@a.py:1/0<")
    assert ErrorAccount("Timeout", "slow").to_wire() == {"type": "Timeout", "message": "slow"}


def test_shapes_cross_as_text_and_read_back_as_data():
    steps = {4: ShapeStep("x @ W_o", [6, 2], ["mha.py", 30, 0], [3]), 3: ShapeStep("matmul", [], ["", 0, 0], [])}
    text = shapes_text(steps, [4, "W_o"], limit=4000)
    assert text == "!<4,W_o 4:x~@~W_o|6x2@mha.py:30/0<3 3:matmul|s@-:0/0<"
    assert parse_shapes(text) == (steps, [4, "W_o"])
    assert shapes_text(steps, [], limit=30) == "4:x~@~W_o|6x2@mha.py:30/0<3"  # as many as fit
    assert parse_shapes("4:x|2xq@a.py:1<") == ({}, []) and parse_shapes(None) == ({}, [])


def test_a_traced_value_is_one_envelope():
    assert traced(1) == {"$traced": 1} and traced(1, [], [["n", 1.0, []]]) == {"$traced": 1, "steps": [], "numbers": [["n", 1.0, []]]}
    assert unwrap(traced(2, [])) == 2 and unwrap({"a": 1}) == {"a": 1}
