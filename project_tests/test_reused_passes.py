"""A batch runs a check again only on a value it has not passed on yet (grader.batch.passes).

The suite here is ch03's with one check added that fails whenever it has run before in the
batch (it leaves a file behind): so whether it ran for a student shows in that student's grade.
Three students, graded one at a time in name order: ``a_first`` and ``b_same`` submit the
solutions (the same values), ``c_other`` an ``attention_scores`` that differs.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from project_tests.helpers import ROOT, exercise, make_submission, mutate, solution_sources

ONCE_TEST = '''

@pytest.mark.points(1)
@calls("attention_scores", INPUTS, INPUTS[1])
def test_runs_once(probed):
    first = not SEEN.exists()
    SEEN.touch()
    assert first, "this check ran before in this batch"
'''


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    """ch03's hidden suite with ``test_runs_once``."""
    base = tmp_path_factory.mktemp("reuse")
    suite = base / "tests" / "ch03"
    shutil.copytree(ROOT / "tests" / "ch03", suite, ignore=shutil.ignore_patterns("__pycache__"))
    with (suite / "test_simple_attention.py").open("a") as tests:
        tests.write(f"\n\nfrom pathlib import Path\n\nSEEN = Path({str(base / 'seen')!r})\n" + ONCE_TEST)
    return suite


def batch(suite, tmp_path, *extra: str) -> dict[str, dict]:
    """Grade the three students with ``suite``, one at a time; their reports by name."""
    (suite.parent.parent / "seen").unlink(missing_ok=True)
    klass = tmp_path / "class"
    scores = mutate(solution_sources("ch03")["simple_attention"], "    return inputs @ query\n",
                    "    return inputs @ query + 1e-3\n")
    for name, overrides in (("a_first", {}), ("b_same", {}), ("c_other", {"simple_attention": scores})):
        make_submission(klass / name, "ch03", overrides)
    reports = tmp_path / "reports"
    proc = subprocess.run([sys.executable, "-m", "grader", "batch", str(klass), "--assignment", "ch03", "--suite", str(suite),
                           "--csv", str(tmp_path / "grades.csv"), "--reports", str(reports), "--jobs", "1", *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {name: json.loads((reports / name / "REPORT.json").read_text()) for name in ("a_first", "b_same", "c_other")}


def once(report: dict) -> str:
    return next(t["status"] for t in exercise(report, "simple_attention")["tests"] if t["name"] == "test_runs_once")


def test_a_check_runs_again_only_on_a_value_it_has_not_passed_on(suite, tmp_path):
    reports = batch(suite, tmp_path)
    assert [once(reports[name]) for name in ("a_first", "b_same", "c_other")] == ["passed", "passed", "failed"]
    assert reports["b_same"] == reports["a_first"]  # the same submission, the same report, test by test
    assert reports["a_first"]["score"] == reports["a_first"]["max_score"] == 76
    other = exercise(reports["c_other"], "simple_attention")["tests"]
    assert [t["name"] for t in other] == [t["name"] for t in exercise(reports["a_first"], "simple_attention")["tests"]]
    assert {t["name"] for t in other if t["status"] != "passed"} >= {"test_matches_reference[attention_scores_textbook]",
                                                                     "test_runs_once"}


def test_without_reuse_every_check_runs_for_every_student(suite, tmp_path):
    reports = batch(suite, tmp_path, "--no-reuse")
    assert [once(reports[name]) for name in ("a_first", "b_same", "c_other")] == ["passed", "failed", "failed"]
