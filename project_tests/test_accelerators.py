"""Grading computes on the CPU whatever accelerators torch could see (grader/accelerators.py).

These machines have none, so the tests ask the processes what they would see: a shell that
shows a GPU (``CUDA_VISIBLE_DEVICES=0`` and the others) must reach neither the trusted process
by the time it imports torch, nor the sandbox's workers, nor the local runner's interpreters.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from grader import accelerators
from project_tests.helpers import PYTHON, ROOT, exercise, grade_cli, make_submission, mutate, solution_sources
from project_tests.test_check import check, without_fork

# A shell that shows every kind of device to whatever it starts.
SHOWN = {"CUDA_VISIBLE_DEVICES": "0", "HIP_VISIBLE_DEVICES": "0", "ZE_AFFINITY_MASK": "0",
         "ONEAPI_DEVICE_SELECTOR": "level_zero:gpu"}
EVIDENCE = "ACCELERATORS "

# A correct causal.py that computes on the GPU when one is there (students write this), and
# says, once imported in the process that runs it, what that process sees.
SEES = f"""
import json as _json
import os as _os

print({EVIDENCE!r} + _json.dumps({{
    "env": {{name: _os.environ.get(name) for name in {sorted(SHOWN)!r}}},
    "cuda devices": torch.cuda.device_count(), "cuda": torch.cuda.is_available(),
    "mps": torch.backends.mps.is_available(), "accelerator": torch.accelerator.is_available(),
}}))
device = "cuda" if torch.cuda.is_available() else "cpu"
"""


def causal_on_the_device() -> str:
    source = solution_sources("ch03")["causal"]
    source = mutate(source, "from torch import nn\n", "from torch import nn\n" + SEES)
    source = mutate(source, "    n = attn_weights.shape[-1]\n", "    attn_weights = attn_weights.to(device)\n    n = attn_weights.shape[-1]\n")
    source = mutate(source, "    n = attn_scores.shape[-1]\n", "    attn_scores = attn_scores.to(device)\n    n = attn_scores.shape[-1]\n")
    source = mutate(source, "    def forward(self, x):\n", "    def forward(self, x):\n        self.to(device)\n        x = x.to(device)\n")
    return source


def seen(output: str) -> dict:
    lines = [line for line in output.splitlines() if line.startswith(EVIDENCE)]
    assert lines, output
    return json.loads(lines[0][len(EVIDENCE):])


def assert_sees_nothing(evidence: dict) -> None:
    assert evidence["env"] == {name: accelerators.HIDDEN[name] for name in SHOWN}
    assert evidence["cuda devices"] == 0
    assert not (evidence["cuda"] or evidence["mps"] or evidence["accelerator"])


def test_hide_sets_every_variable_and_keeps_the_rest():
    environ = accelerators.hide({"PATH": "/bin", **SHOWN})
    assert environ == {"PATH": "/bin", **accelerators.HIDDEN}
    assert set(SHOWN) == set(accelerators.HIDDEN)


def test_a_mac_reports_no_mps_once_hidden(monkeypatch):
    """Simulated on this Linux build: MPS built and available, until hide_mps."""
    import torch

    monkeypatch.setattr(torch._C, "_has_mps", True)
    monkeypatch.setattr(torch._C, "_mps_is_available", lambda: True)
    torch.backends.mps.is_available.cache_clear()
    try:
        assert torch.backends.mps.is_available() and torch.mps.is_available() and torch.mps.device_count() == 1
        accelerators.hide_mps(torch)
        assert not torch.backends.mps.is_available()
        assert not torch.mps.is_available() and torch.mps.device_count() == 0
    finally:
        monkeypatch.undo()
        torch.backends.mps.is_available.cache_clear()
    assert not torch.backends.mps.is_available()  # this machine's own answer again


ENTRY = """
import json, os, sys, types
fake = types.ModuleType("grader.cli")
def main():
    print(json.dumps({"env": {name: os.environ.get(name) for name in sys.argv[1:]}, "torch imported": "torch" in sys.modules}))
    return 0
fake.main = main
sys.modules["grader.cli"] = fake
import grader.__main__
"""


@pytest.mark.end_to_end
def test_the_entry_point_hides_them_before_torch_is_imported():
    """``python -m grader`` (every verb, and plain pytest in a template, which runs it) hides
    them before the command's module is even imported."""
    proc = subprocess.run([PYTHON, "-c", ENTRY, *SHOWN], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **SHOWN})
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout.splitlines()[-1])
    assert found == {"env": {name: accelerators.HIDDEN[name] for name in SHOWN}, "torch imported": False}


@pytest.mark.end_to_end
def test_the_sandbox_workers_see_no_device_and_code_that_would_use_one_scores_full_marks(tmp_path):
    submission = make_submission(tmp_path / "s", "ch03", {"causal": causal_on_the_device()})
    proc, report = grade_cli(submission, "ch03", env=SHOWN)
    assert proc.returncode == 0, proc.stderr
    assert report["grader_errors"] == [] and report["score"] == report["max_score"] > 0
    assert_sees_nothing(seen(exercise(report, "causal")["output"]))


@pytest.mark.end_to_end
def test_the_local_runner_sees_no_device(tmp_path):
    """``check`` on macOS or Windows: spawned interpreters instead of the sandbox."""
    submission = make_submission(tmp_path / "s", "ch03", {"causal": causal_on_the_device()})
    proc, report = check(submission, str(submission), "--assignment", "ch03", cwd=ROOT,
                         env={**without_fork(tmp_path), **SHOWN})
    assert proc.returncode == 0, proc.stderr
    causal = exercise(report, "causal")
    assert causal["score"] == causal["max_score"] > 0
    assert_sees_nothing(seen(causal["output"]))


@pytest.mark.end_to_end
def test_the_batch_regrade_sees_no_device_either(tmp_path):
    """The grade of record: ``batch``'s grading processes are forks of one that ran the reference's backward passes."""
    make_submission(tmp_path / "class" / "alice", "ch03", {"causal": causal_on_the_device()})
    proc = subprocess.run([PYTHON, "-m", "grader", "batch", str(tmp_path / "class"), "--assignment", "ch03",
                           "--csv", str(tmp_path / "out" / "grades.csv")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, **SHOWN})
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(next((tmp_path / "out").rglob("REPORT.json")).read_text())
    assert report["grader_errors"] == [] and report["score"] == report["max_score"] > 0
    assert_sees_nothing(seen(exercise(report, "causal")["output"]))
