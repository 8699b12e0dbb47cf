"""The steps of a computation cross the border only for a diagnosis: the graded run sends none,
and a failing module's failed probes are run again with them (``GradingPlugin.add_steps``)."""

from __future__ import annotations

import io
import json
import sys

import torch

from grader.sandbox import wire, worker
from project_tests.helpers import exercise, grade_many, make_submission, mutate, solution_sources

SCALING = "attn_scores / keys.shape[-1] ** 0.5"


def test_the_graded_run_sends_traced_values_without_their_steps(tmp_path, monkeypatch):
    (tmp_path / "tiny.py").write_text("import torch\n\ndef double(x):\n    return torch.softmax(x, dim=-1) * 2\n")
    probe = {"id": "t", "probe": "call",
             "kwargs": {"function": "double", "args": [wire.encode_tensor(torch.tensor([1.0, 2.0]))], "seed": None}}
    monkeypatch.chdir(tmp_path)  # the worker moves into the submission and puts it on sys.path
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setitem(sys.modules, "tiny", None)  # so that the module the worker imports is forgotten after
    monkeypatch.delitem(sys.modules, "tiny")
    sent = {}
    for steps in (True, False):
        channel = io.StringIO()
        worker.run(channel, "tiny", str(tmp_path), None, [probe], steps=steps)
        sent[steps] = json.loads(channel.getvalue().splitlines()[-1])["value"]
    assert [label for label, _ in sent[True]["steps"]][:2] == ["softmax input", "softmax"]
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
