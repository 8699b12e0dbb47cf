"""``python -m grader check``: the public tests, run in a released template as a student would."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from grader.check import NOTE, find_assignment, local_noise
from project_tests.helpers import ROOT, solution_sources
from project_tests.test_release import fresh_copy

PYTHON = sys.executable


def check(folder: Path, *extra: str, cwd: Path | None = None):
    """Run ``python -m grader check`` in ``folder`` (the template's own grader); return (process, report)."""
    report_path = folder.parent / f"{folder.name}-check.json"
    proc = subprocess.run([PYTHON, "-m", "grader", "check", "--json", str(report_path), *extra],
                          cwd=cwd or folder, capture_output=True, text=True, timeout=300)
    return proc, json.loads(report_path.read_text()) if report_path.exists() else None


def one_line(text: str) -> str:
    return " ".join(text.split())


def test_check_on_the_release_stubs_scores_zero_with_the_note(tmp_path_factory, tmp_path):
    template = fresh_copy("ch03", tmp_path_factory, tmp_path)
    proc, report = check(template)
    assert proc.returncode == 0, proc.stderr
    assert report["assignment"] == "ch03" and report["score"] == 0 and report["max_score"] > 0
    assert {e["name"] for e in report["exercises"]} == set(solution_sources("ch03"))
    assert all(e["message"] == "not attempted yet" for e in report["exercises"])
    assert report["flags"] == [] and report["grader_errors"] == []  # template files are known
    assert NOTE in one_line(proc.stdout)
    assert "simple_attention" in proc.stdout and "points" in proc.stdout


def test_check_on_solutions_passes_every_public_test_and_so_does_plain_pytest(tmp_path_factory, tmp_path):
    template = fresh_copy("ch03", tmp_path_factory, tmp_path)
    for stem, text in solution_sources("ch03").items():
        (template / "exercises" / "ch03" / f"{stem}.py").write_text(text)
    proc, report = check(template)
    assert proc.returncode == 0, proc.stderr
    failing = [(e["name"], t["name"], t["message"]) for e in report["exercises"] for t in e["tests"] if t["status"] != "passed"]
    assert failing == [] and report["score"] == report["max_score"] > 0
    assert NOTE in one_line(proc.stdout)

    plain = subprocess.run([PYTHON, "-m", "pytest", "-q"], cwd=template, capture_output=True, text=True, timeout=300)
    assert plain.returncode == 0, plain.stdout[-3000:]
    assert f"{len(report['exercises'])} passed" in plain.stdout


def test_plain_pytest_fails_per_exercise_with_the_reason(tmp_path_factory, tmp_path):
    template = fresh_copy("d2l_attention", tmp_path_factory, tmp_path)
    sources = solution_sources("d2l_attention")
    for stem in ("masked_softmax", "scoring"):
        (template / "exercises" / "d2l_attention" / f"{stem}.py").write_text(sources[stem])
    (template / ".venv" / "lib").mkdir(parents=True)
    (template / ".venv" / "lib" / "site.pth").write_text("")  # a student's virtual environment: not flagged
    plain = subprocess.run([PYTHON, "-m", "pytest", "-q"], cwd=template, capture_output=True, text=True, timeout=300)
    assert plain.returncode == 1
    assert "2 failed, 2 passed" in plain.stdout
    assert "positional_encoding.py: 0/1 public points" in plain.stdout and "not attempted yet" in plain.stdout
    proc, report = check(template)
    assert report["flags"] == []


def test_check_flags_edited_template_files_and_finds_the_assignment(tmp_path_factory, tmp_path):
    template = fresh_copy("ch03", tmp_path_factory, tmp_path)
    (template / "pytest.ini").write_text("[pytest]\naddopts = -p no:grader\n")
    (template / "conftest.py").write_text("import os\n")
    proc, report = check(template)
    assert sorted(report["flags"]) == sorted([
        "conftest.py tries to configure pytest or Python (ignored by the grader)",
        "pytest.ini tries to configure pytest or Python (ignored by the grader)",
    ])
    assert find_assignment(template) == "ch03"
    assert local_noise(".venv/lib/x.pth tries to configure pytest or Python (ignored by the grader)")
    assert not local_noise("conftest.py tries to configure pytest or Python (ignored by the grader)")


def test_check_in_the_instructor_repository_needs_an_assignment(tmp_path):
    proc = subprocess.run([PYTHON, "-m", "grader", "check"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "choose one with --assignment" in proc.stderr
    proc = subprocess.run([PYTHON, "-m", "grader", "check", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "no exercises/<assignment>/ folder" in proc.stderr


def test_check_of_a_submission_folder_from_the_instructor_repository(tmp_path):
    submission = tmp_path / "student"
    shutil.copytree(ROOT / "exercises" / "d2l_attention", submission / "exercises" / "d2l_attention")
    proc, report = check(submission, str(submission), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert report["assignment"] == "d2l_attention" and report["score"] == 0
    proc = subprocess.run([PYTHON, "-m", "grader", "check", str(submission), "--assignment", "nope"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "no public tests for 'nope'" in proc.stderr


def test_instructor_commands_in_the_template_say_so(tmp_path_factory, tmp_path):
    template = fresh_copy("ch03", tmp_path_factory, tmp_path)
    for command in (["demo"], ["batch", ".", "--assignment", "ch03", "--csv", "g.csv"]):
        proc = subprocess.run([PYTHON, "-m", "grader", *command], cwd=template, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, proc.stderr
        assert "instructor command" in proc.stderr and "Traceback" not in proc.stderr


def test_check_names_the_missing_scaling_in_v1_and_v2_and_counts_checks_not_points(tmp_path_factory, tmp_path):
    template = fresh_copy("ch03", tmp_path_factory, tmp_path)
    unscaled = "torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)"
    for stem, text in solution_sources("ch03").items():
        if stem in ("self_attention_v1", "self_attention_v2"):
            text = text.replace(unscaled, "torch.softmax(attn_scores, dim=-1)")
        (template / "exercises" / "ch03" / f"{stem}.py").write_text(text)
    proc, report = check(template)
    assert proc.returncode == 0, proc.stderr
    for exercise in report["exercises"]:
        concepts = (exercise["diagnosis"] or {}).get("concepts", [])
        if exercise["name"] in ("self_attention_v1", "self_attention_v2"):
            assert len(concepts) == 1 and "sqrt(d_k)" in concepts[0], exercise
        else:
            assert exercise["score"] == exercise["max_score"] and not concepts
    assert "public checks: 16/18 passed" in proc.stdout and "sqrt(d_k)" in proc.stdout
    assert " / 18 points" not in proc.stdout
