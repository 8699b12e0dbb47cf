"""A rehearsal of the student's GitHub job, outside the project's own .venv.

For every assignment: the released template's workflow is read from the released file; a
fresh virtual environment gets only what that workflow's install step installs (the CPU
index, unreachable offline, is dropped so pip uses this machine's default); the instructor
checkout is put where the workflow's own step moves it; the grade step's command runs exactly
as the YAML writes it, as root (a ``sudo`` that only passes the command on, where the machine
has none and we are root already). Solutions must score full and stubs zero, with payloads
that the reporter turns into the same totals. Then the environment is broken on purpose
(numpy not installed; another torch version) and the grader must exit 3 with one line and an
``::error::``, and post nothing.

The job's venv is built once and kept in ``.rehearsal-venvs/`` while neither the install
step's command nor the file it installs changes (``venv_key``); a clean clone builds it on its
first run, and a venv whose packages changed since it was built is built again.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from grader import environment
from project_tests.helpers import ROOT, assignments, copy_repository, solution_sources
from project_tests.classroom_reporter import Reporter, decode_outputs
from project_tests.test_release import released

pytestmark = pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="the rehearsal runs the job as root")


def steps_of(template: Path) -> list[dict]:
    """The steps of the released Classroom workflow."""
    workflow = yaml.safe_load((template / ".github" / "workflows" / "classroom.yml").read_text())
    return workflow["jobs"]["run-autograding-tests"]["steps"]


def step(steps: list[dict], *, named: str = "", step_id: str = "") -> dict:
    """The step whose name starts with ``named``, or whose id is ``step_id``."""
    return next(s for s in steps if (step_id and s.get("id") == step_id) or (named and s.get("name", "").startswith(named)))


class Runner:
    """A GitHub-hosted runner in a folder: a workspace, RUNNER_TEMP and the job's environment."""

    def __init__(self, folder: Path, template: Path, python_bin: Path):
        self.workspace, self.temp, self.home = folder / "workspace", folder / "runner-temp", folder / "home"
        shutil.copytree(template, self.workspace)
        for path in (self.temp, self.home, folder / "bin"):
            path.mkdir(parents=True, exist_ok=True)
        self.output, self.summary = self.temp / "github-output", self.temp / "step-summary"
        paths = [str(python_bin)]
        if shutil.which("sudo") is None:  # root already: sudo only has to pass the command on
            sudo = folder / "bin" / "sudo"
            sudo.write_text('#!/bin/sh\n[ "$1" = "-E" ] && shift\nexec "$@"\n')
            sudo.chmod(0o755)
            paths.append(str(sudo.parent))
        self.env = {
            "PATH": os.pathsep.join([*paths, "/usr/local/bin", "/usr/bin", "/bin"]), "HOME": str(self.home),
            "LANG": "C.UTF-8", "CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(self.workspace),
            "RUNNER_TEMP": str(self.temp), "GITHUB_OUTPUT": str(self.output), "GITHUB_STEP_SUMMARY": str(self.summary),
            **{k: v for k, v in os.environ.items() if k.startswith("PIP_")},  # this machine's package index
        }

    def run(self, step: dict, *, script: str | None = None) -> subprocess.CompletedProcess:
        """Run a ``run:`` step as Actions does (bash -eo pipefail), in its working directory."""
        folder = step.get("working-directory", str(self.workspace)).replace("${{ runner.temp }}", str(self.temp))
        return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script or step["run"]],
                              cwd=folder, env=self.env, capture_output=True, text=True, timeout=1800)

    def place_grader(self, steps: list[dict]) -> None:
        """Check the instructor repository out into the workspace, then run the workflow's own move."""
        checkout = next(s for s in steps if s.get("with", {}).get("repository") == "${{ vars.GRADER_REPO }}")
        copy_repository(self.workspace / checkout["with"]["path"])  # what actions/checkout gives
        moved = self.run(next(s for s in steps if checkout["with"]["path"] in s.get("run", "")))
        assert moved.returncode == 0, moved.stderr


def install_script(steps: list[dict]) -> str:
    """The install step's command, with the CPU index (unreachable offline) dropped."""
    script = step(steps, named="Install").get("run")
    dropped = f"--extra-index-url {environment.CPU_INDEX}"
    assert dropped in script, script
    return script.replace(dropped, "")


# The job's venv is kept between runs under this folder (ignored by git), keyed by what its
# install step installs; a clean clone, or any change to that step or that file, builds it anew.
JOB_VENVS = ROOT / ".rehearsal-venvs"


def venv_key(script: str) -> str:
    """What the job venv is made of: the install command, the file it installs, this Python and pip's settings."""
    installed = '-r "$RUNNER_TEMP/grader/grader/requirements.txt"'
    assert installed in script, f"the install step no longer installs {installed}: update venv_key\n{script}"
    parts = [script, environment.REQUIREMENTS.read_text(), sys.version, sys.executable,
             *sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("PIP_"))]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def freeze(venv: Path) -> str:
    """What is installed in ``venv``, as ``pip freeze`` lists it."""
    return subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "freeze", "--all"], check=True,
                          capture_output=True, text=True).stdout


@pytest.fixture(scope="session")
def job_python(tmp_path_factory) -> Path:
    """A venv with only what the released workflow installs (the same step for every assignment).

    Built fresh the first time, then reused while its key (``venv_key``) is unchanged and what it
    holds is exactly what it held when built (``pip freeze`` recorded then); otherwise rebuilt.
    """
    scripts = set()
    for assignment in assignments():
        proc, template = released(assignment, tmp_path_factory)
        assert proc.returncode == 0, proc.stderr
        scripts.add(install_script(steps_of(template)))
    assert len(scripts) == 1, "the assignments' workflows install different things"
    script = scripts.pop()
    key = venv_key(script)
    JOB_VENVS.mkdir(exist_ok=True)
    with open(JOB_VENVS / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test run in this checkout may be building it
        venv, built = JOB_VENVS / key, JOB_VENVS / f"{key}.freeze"
        if built.exists() and (venv / "bin" / "python").exists() and freeze(venv) == built.read_text():
            return venv / "bin"
        for old in JOB_VENVS.iterdir():  # stale or half-built venvs: one job venv is kept at a time
            if old.name != "lock":
                shutil.rmtree(old) if old.is_dir() else old.unlink()
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        runner = Runner(tmp_path_factory.mktemp("job-venv") / "runner", template, venv / "bin")
        runner.place_grader(steps_of(template))
        installed = runner.run({}, script=script)
        assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
        built.write_text(freeze(venv))
    return venv / "bin"


def derived_venv(folder: Path, job_bin: Path, *, leave_out: str = "", torch_version: str = "") -> Path:
    """A venv that has the job venv's packages (as links), but ``leave_out`` and, if asked, a torch claiming another version."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    source = next((job_bin.parent / "lib").glob("python3*/site-packages"))
    target = next((folder / "lib").glob("python3*/site-packages"))
    for entry in source.iterdir():
        if leave_out and entry.name.lower().startswith(leave_out):
            continue
        if entry.name == "torch" and torch_version:
            (target / "torch").mkdir()
            for part in entry.iterdir():
                if part.name != "version.py":
                    (target / "torch" / part.name).symlink_to(part)
            text = (entry / "version.py").read_text().replace(environment.pins()["torch"], torch_version)
            (target / "torch" / "version.py").write_text(text)
        else:
            (target / entry.name).symlink_to(entry)
    return folder / "bin"


def job(tmp_path: Path, assignment: str, tmp_path_factory, python_bin: Path, sources: dict[str, str] | None = None):
    """Run the job on a submission (the released stubs, or ``sources`` written over them)."""
    _, template = released(assignment, tmp_path_factory)
    steps = steps_of(template)
    runner = Runner(tmp_path, template, python_bin)
    for stem, text in (sources or {}).items():
        (runner.workspace / "exercises" / assignment / f"{stem}.py").write_text(text)
    runner.place_grader(steps)
    graded = runner.run(step(steps, step_id="grade"))
    report_path = runner.temp / "grader" / "report.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else None
    outputs = decode_outputs(runner.output) if runner.output.exists() else {}
    reporter = step(steps, named="Report to GitHub Classroom")
    env = {name: value.replace("${{ steps.grade.outputs.", "").rstrip("} ") for name, value in reporter["env"].items()}
    posted = Reporter.run(reporter["with"]["runners"], {name: outputs[runner_id] for name, runner_id in env.items()}) \
        if outputs else None
    return graded, report, posted


@pytest.mark.parametrize("assignment", assignments())
def test_the_released_job_grades_solutions_full_and_stubs_zero(assignment, job_python, tmp_path, tmp_path_factory):
    for name, sources in (("solutions", solution_sources(assignment)), ("stubs", None)):
        graded, report, posted = job(tmp_path / name, assignment, tmp_path_factory, job_python, sources)
        assert graded.returncode == 0, graded.stdout[-2000:] + graded.stderr[-2000:]
        assert not report.get("grader_errors")
        expected = report["max_score"] if name == "solutions" else 0
        assert report["score"] == expected and report["max_score"] > 0, (name, report["score"])
        assert (posted.posted_total, posted.posted_max) == (report["score"], report["max_score"])
        assert "::error" not in graded.stdout


@pytest.mark.parametrize("broken, expected", [
    ({"leave_out": "numpy"}, "the package numpy is not installed"),
    ({"torch_version": "2.11.0"}, "torch 2.11.0+cpu is installed, but grading needs torch==2.13.0"),
], ids=["numpy-missing", "other-torch"])
def test_a_broken_environment_exits_3_and_posts_nothing(broken, expected, job_python, tmp_path, tmp_path_factory):
    python_bin = derived_venv(tmp_path / "venv", job_python, **broken)
    graded, report, posted = job(tmp_path / "job", assignments()[0], tmp_path_factory, python_bin, None)
    assert graded.returncode == 3, graded.stdout[-2000:] + graded.stderr[-2000:]
    lines = graded.stderr.strip().splitlines()  # torch may warn first (no numpy): the grader says one line, last
    ours = [line for line in lines if line.startswith("error:")]
    assert ours == lines[-1:] and ours[0].startswith("error: the grading environment is broken: ")
    assert expected in ours[0] and "pip install -r grader/requirements.txt" in ours[0]
    assert "::error title=The grading environment is broken::" in graded.stdout
    assert report is None and posted is None  # no report, nothing for the reporter to post
