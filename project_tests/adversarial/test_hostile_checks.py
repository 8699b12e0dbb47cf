"""Hostile submissions against the checks (``attacks_on_the_checks.py``), graded through the real
command line: each gains nothing (its module scores as its honest stub, 0; every other module full
marks) and voids nothing (exit 0, a grade, no grader error, no failed diagnosis)."""

from __future__ import annotations

import pytest

from grader.release.stubs import make_stub
from project_tests.adversarial.attacks_on_the_checks import ATTACKS
from project_tests.helpers import grade_cli, make_submission, solution_sources


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_a_hostile_check_attack_gains_nothing_and_voids_nothing(tmp_path, name):
    assignment, stem, source = ATTACKS[name]
    stub = make_stub(solution_sources(assignment)[stem])
    root = make_submission(tmp_path / "submission", assignment, {stem: source.replace("@STUB@", stub)})
    proc, report = grade_cli(root, assignment)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert report is not None and report["grader_errors"] == [], report and report["grader_errors"]
    assert report["diagnosis_errors"] == [], report["diagnosis_errors"]  # the diagnosis copes with any value
    for exercise in report["exercises"]:
        expected = 0 if exercise["name"] == stem else exercise["max_score"]
        passed = [t["name"] for t in exercise["tests"] if t["status"] == "passed"]
        assert exercise["score"] == expected, (exercise["name"], passed)
