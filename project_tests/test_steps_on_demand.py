"""The steps of a computation cross the border only for a diagnosis: the graded run sends none,
and a failing module's failed probes are run again with them (``GradingPlugin.add_steps``)."""

from __future__ import annotations

import io
import json
import sys

import torch

from grader.sandbox import wire, worker
from grader.sandbox.protocol import ProbeCall
from project_tests.helpers import exercise, grade_many, make_submission, mutate, solution_sources

SCALING = "attn_scores / keys.shape[-1] ** 0.5"


def test_the_graded_run_sends_traced_values_without_their_steps(tmp_path, monkeypatch):
    (tmp_path / "tiny.py").write_text("import torch\n\ndef double(x):\n    return torch.softmax(x, dim=-1) * 2\n")
    probe = ProbeCall("t", "call", {"function": "double", "args": [wire.encode_tensor(torch.tensor([1.0, 2.0]))], "seed": None})
    monkeypatch.chdir(tmp_path)  # the worker moves into the submission and puts it on sys.path
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setitem(sys.modules, "tiny", None)  # so that the module the worker imports is forgotten after
    monkeypatch.delitem(sys.modules, "tiny")
    sent = {}
    for steps in (True, False):
        channel = io.StringIO()
        worker.run(channel, "tiny", str(tmp_path), None, [probe], steps=steps)
        sent[steps] = json.loads(channel.getvalue().splitlines()[-1])["value"]
    assert [label for label, *_ in sent[True]["steps"]][:2] == ["softmax input", "softmax"]
    assert sent[True]["steps"][1][2] == ["tiny.py", 4, 0]  # each step with the student's line that computed it
    assert sent[False] == {"$traced": sent[True]["$traced"]}


def test_a_failing_module_is_localized_from_steps_asked_for_again_unless_its_results_change(tmp_path):
    source = solution_sources("ch03")["self_attention_v1"]
    unscaled = mutate(source, SCALING, "attn_scores")
    # The same mistake, but scaled by a factor drawn anew at every call: a second run gives other values.
    drifting = mutate(mutate(source, SCALING, "attn_scores * (1 + int.from_bytes(os.urandom(8), 'big') / 2**64)"), "import torch", "import os\nimport torch")
    roots = [make_submission(tmp_path / name, "ch03", {"self_attention_v1": text})
             for name, text in (("unscaled", unscaled), ("drifting", drifting))]
    reports = grade_many(roots, "ch03")
    steady, unsteady = (exercise(reports[root], "self_attention_v1") for root in roots)
    assert steady["score"] < steady["max_score"] and unsteady["score"] < unsteady["max_score"]
    # From the steps of the second run: the step where the values first leave the reference's.
    assert steady["diagnosis"]["stage"] not in ("", "result"), steady["diagnosis"]
    # The second run did not reproduce the graded one: no steps, the failing check's own values.
    assert unsteady["diagnosis"]["stage"] == "result", unsteady["diagnosis"]
    failed = next(t for t in unsteady["tests"] if t["status"] == "failed")
    assert unsteady["diagnosis"]["actual"] == failed["feedback"]["actual"]


SLEEPY_RUN = '''
import json, sys, time
from pathlib import Path
from grader.assignment import Assignment
from grader.grade import grade
from grader.sandbox import client
from grader.settings import Settings

plans = []
original = client.Sandbox.run


def run(self, plan, timeout):
    start = time.monotonic()
    result = original(self, plan, timeout)
    plans.append({"budgets": {stem: module.budget for stem, module in plan.modules.items()},
                  "steps": plan.steps, "spent": result.spent, "wall": time.monotonic() - start})
    return result


client.Sandbox.run = run
settings = Settings(module_budget=float(sys.argv[2]), probe_timeout=5.0)
with client.Sandbox() as sandbox:
    report = grade(Path(sys.argv[1]), Assignment.resolve("ch03", settings), settings, sandbox)
print(json.dumps({"plans": plans, "score": report.to_dict()["exercises"]}))
'''


def test_a_module_that_sleeps_in_every_probe_pays_its_budget_once_the_diagnosis_included(tmp_path):
    """The diagnosis's re-run gets only what the graded run left of the module's budget: a module that
    used it up is not run again (it once got a second, fresh budget: twice the time)."""
    import subprocess

    from project_tests.helpers import PYTHON, ROOT

    source = solution_sources("ch03")["self_attention_v1"]
    sleepy = mutate(mutate(source, SCALING, "attn_scores"), "import torch", "import time\nimport torch")
    sleepy = mutate(sleepy, "    def forward(self, x):", "    def forward(self, x):\n        time.sleep(1.5)")
    root = make_submission(tmp_path / "sleepy", "ch03", {"self_attention_v1": sleepy})
    budget = 6.0
    proc = subprocess.run([PYTHON, "-c", SLEEPY_RUN, str(root), str(budget)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    answer = json.loads(proc.stdout.splitlines()[-1])
    graded, *again = answer["plans"]
    assert not graded["steps"] and graded["budgets"]["self_attention_v1"] is None
    spent = graded["spent"]["self_attention_v1"]
    assert budget - 0.5 <= spent <= budget  # the sleeps used it all: later probes are timeouts
    v1 = next(e for e in answer["score"] if e["name"] == "self_attention_v1")
    assert v1["score"] < v1["max_score"] and any("time budget" in (t.get("message") or "") for t in v1["tests"]), v1
    for plan in again:  # a re-run, if any, is for other modules, never for the one that used its budget up
        assert "self_attention_v1" not in plan["budgets"], plan
        for stem, left in plan["budgets"].items():
            assert left + graded["spent"][stem] <= budget + 1e-6 and plan["spent"][stem] <= left + 1e-6
