"""Plain ``pytest`` runs the public tests through the grader, like ``python -m grader check``.

One test per exercise; it passes when every public test of that exercise passes. When one
fails, the message lists what went wrong; ``python -m grader check <exercise>`` shows its
diagnosis and hints. Hidden tests run on GitHub when you push; they decide your grade.
"""

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def exercises():
    """(assignment, exercise) for every assignment in exercises/ that has public tests."""
    found = []
    for folder in sorted((ROOT / "exercises").iterdir()):
        rubric = ROOT / "public_tests" / folder.name / "rubric.toml"
        if folder.is_dir() and rubric.is_file():
            found += [(folder.name, stem) for stem in tomllib.loads(rubric.read_text())["exercises"]]
    return found


_reports = {}


def report_of(assignment, tmp_path_factory):
    """The public report of ``assignment`` (the grader runs once per assignment)."""
    if assignment not in _reports:
        path = tmp_path_factory.mktemp("public") / "report.json"
        proc = subprocess.run(
            [sys.executable, "-m", "grader", "check", "--assignment", assignment, "--json", str(path)],
            cwd=ROOT, capture_output=True, text=True,
        )
        if not path.is_file():
            pytest.fail(f"the grader could not run:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}", pytrace=False)
        _reports[assignment] = json.loads(path.read_text())
    return _reports[assignment]


@pytest.mark.parametrize("assignment, exercise", exercises(), ids=lambda value: value)
def test_public(assignment, exercise, tmp_path_factory):
    report = report_of(assignment, tmp_path_factory)
    result = next(e for e in report["exercises"] if e["name"] == exercise)
    failing = [f"  {t['name']} ({t['status']}): {t['message']}" for t in result["tests"] if t["status"] != "passed"]
    if failing:
        pytest.fail(
            f"{exercise}.py: {result['score']:g}/{result['max_score']:g} public points\n" + "\n".join(failing)
            + f"\nRun `python -m grader check {exercise}` for its diagnosis and hints.",
            pytrace=False,
        )
