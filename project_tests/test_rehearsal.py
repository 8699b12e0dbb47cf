"""A rehearsal of the student's GitHub job, outside the project's own .venv.

For every assignment: the released template's workflow is read from the released file. Its
install step runs exactly as the YAML writes it, twice, each time on a fresh runner (a fresh
Python standing in for setup-python, ``uv`` on PATH standing in for setup-uv), with the cache
folder of its ``actions/cache`` step kept between the two as that action would restore it;
both times are printed. The CPU index, unreachable offline, is dropped, and pip's settings of
the environment are handed to uv (``PIP_FIND_LINKS``, where this machine's torch wheel lies, as
``UV_FIND_LINKS``; the CI's ``PIP_EXTRA_INDEX_URL`` as ``UV_EXTRA_INDEX_URL``). The
instructor checkout is put where the workflow's own step moves it; the grade step's command
runs exactly as the YAML writes it, as root (a ``sudo`` that only passes the command on, where
the machine has none and we are root already), with the venv the install step added to
``$GITHUB_PATH``. Solutions must score full and stubs zero, with payloads that the reporter
turns into the same totals. Then the environment is broken on purpose (numpy not installed;
another torch version) and the grader must exit 3 with one line and an ``::error::``, and post
nothing.

The cache folder is kept in ``.rehearsal-venvs/`` (ignored by git), keyed like the workflow's
cache (the requirements file and the Python): in a clean clone the first install of a run starts
from an empty cache, later runs start from the kept one.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
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


# pip's environment variables and uv's for the same setting.
UV_NAMES = {"PIP_FIND_LINKS": "UV_FIND_LINKS", "PIP_INDEX_URL": "UV_INDEX_URL", "PIP_EXTRA_INDEX_URL": "UV_EXTRA_INDEX_URL"}


def uv_binary() -> str:
    """The ``uv`` that setup-uv would put on PATH: the one of the project's environment."""
    from uv import find_uv_bin  # pinned in requirements.txt

    return find_uv_bin()


class Runner:
    """A GitHub-hosted runner in a folder: a workspace, RUNNER_TEMP and the job's environment."""

    def __init__(self, folder: Path, template: Path, python_bin: Path):
        self.workspace, self.temp, self.home = folder / "workspace", folder / "runner-temp", folder / "home"
        shutil.copytree(template, self.workspace)
        tools = folder / "bin"
        for path in (self.temp, self.home, tools):
            path.mkdir(parents=True, exist_ok=True)
        self.output, self.summary, self.path_file = (self.temp / name for name in ("github-output", "step-summary", "github-path"))
        (tools / "uv").symlink_to(uv_binary())  # what setup-uv does
        if shutil.which("sudo") is None:  # root already: sudo only has to pass the command on
            (tools / "sudo").write_text('#!/bin/sh\n[ "$1" = "-E" ] && shift\nexec "$@"\n')
            (tools / "sudo").chmod(0o755)
        self.paths = [str(python_bin), str(tools), "/usr/local/bin", "/usr/bin", "/bin"]
        self.env = {
            "HOME": str(self.home), "LANG": "C.UTF-8", "CI": "true", "GITHUB_ACTIONS": "true",
            "GITHUB_WORKSPACE": str(self.workspace), "RUNNER_TEMP": str(self.temp), "GITHUB_OUTPUT": str(self.output),
            "GITHUB_STEP_SUMMARY": str(self.summary), "GITHUB_PATH": str(self.path_file),
            **{k: v for k, v in os.environ.items() if k.startswith("PIP_")},  # this machine's package index
        }
        # pip's settings of this machine or CI, for uv too: here PIP_FIND_LINKS (where this machine
        # keeps its torch wheel), in the instructor's CI PIP_EXTRA_INDEX_URL (the CPU index).
        self.env |= {uv: os.environ[pip] for pip, uv in UV_NAMES.items() if pip in os.environ}
        self.env |= {k: v for k, v in os.environ.items() if k in ("SSL_CERT_FILE", "SSL_CERT_DIR")}  # this machine's CAs

    def expand(self, value: str) -> str:
        """``${{ runner.temp }}`` as Actions fills it in."""
        return value.replace("${{ runner.temp }}", str(self.temp))

    def run(self, step: dict, *, script: str | None = None) -> subprocess.CompletedProcess:
        """Run a ``run:`` step as Actions does (bash -eo pipefail), in its working directory, with
        its ``env:``, and with what earlier steps added to ``$GITHUB_PATH`` first on PATH."""
        folder = self.expand(step.get("working-directory", str(self.workspace)))
        added = self.path_file.read_text().split() if self.path_file.exists() else []
        env = {**self.env, **{k: self.expand(v) for k, v in step.get("env", {}).items()},
               "PATH": os.pathsep.join([*reversed(added), *self.paths])}
        return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script or step["run"]],
                              cwd=folder, env=env, capture_output=True, text=True, timeout=1800)

    def place_grader(self, steps: list[dict]) -> None:
        """Check the instructor repository out into the workspace, then run the workflow's own move."""
        checkout = next(s for s in steps if s.get("with", {}).get("repository") == "${{ vars.GRADER_REPO }}")
        copy_repository(self.workspace / checkout["with"]["path"])  # what actions/checkout gives
        moved = self.run(next(s for s in steps if checkout["with"]["path"] in s.get("run", "")))
        assert moved.returncode == 0, moved.stderr

    def restore_cache(self, steps: list[dict], kept: Path) -> None:
        """Put the kept cache folder where the workflow's ``actions/cache`` step restores it."""
        cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache@"))
        target = Path(self.expand(cache["with"]["path"]))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(kept, target_is_directory=True)


def install_step(steps: list[dict]) -> dict:
    """The install step, with the CPU index (unreachable offline) dropped from its command."""
    install = step(steps, named="Install")
    dropped = f"--extra-index-url {environment.CPU_INDEX}"
    assert dropped in install["run"], install["run"]
    return {**install, "run": install["run"].replace(dropped, "")}


# The job's cache folder is kept between runs under this folder (ignored by git), keyed as the
# workflow keys it (the requirements file it installs, the Python); one cache is kept at a time.
JOB_CACHES = ROOT / ".rehearsal-venvs"


def cache_key(install: dict) -> str:
    """What the workflow's cache key is made of, here: the file installed and this Python."""
    installed = '-r "$RUNNER_TEMP/grader/grader/requirements.txt"'
    assert installed in install["run"], f"the install step no longer installs {installed}: update cache_key\n{install['run']}"
    parts = [environment.REQUIREMENTS.read_text(), sys.version, sys.platform]
    return "uv-cache-" + hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def timed_install(runner: Runner, steps: list[dict], kept: Path) -> tuple[float, subprocess.CompletedProcess]:
    """Restore the cache, run the install step as the workflow writes it; its wall time and outcome."""
    runner.place_grader(steps)
    runner.restore_cache(steps, kept)
    start = time.perf_counter()
    installed = runner.run(install_step(steps))
    return time.perf_counter() - start, installed


def warmth(installed: subprocess.CompletedProcess) -> str:
    """Whether uv found everything in its cache (it says "Prepared" only when it downloaded or unpacked)."""
    return "with the cache cold (packages downloaded)" if "Prepared" in installed.stderr else "from the restored cache"


@pytest.fixture(scope="session")
def job_install(tmp_path_factory) -> dict:
    """The released install step run twice, on two fresh runners sharing the kept cache folder.

    Returns each run's time, its output and the bin folder of the venv the second one made
    (the one the grade steps below use, as ``$GITHUB_PATH`` gives it).
    """
    templates, scripts = {}, set()
    for assignment in assignments():
        proc, templates[assignment] = released(assignment, tmp_path_factory)
        assert proc.returncode == 0, proc.stderr
        scripts.add(install_step(steps_of(templates[assignment]))["run"])
    assert len(scripts) == 1, "the assignments' workflows install different things"
    template = templates[assignments()[0]]
    steps = steps_of(template)
    key = cache_key(install_step(steps))
    JOB_CACHES.mkdir(exist_ok=True)
    with open(JOB_CACHES / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test run in this checkout may be using it
        for old in JOB_CACHES.iterdir():  # caches of another key, or the venvs kept before
            if old.name not in ("lock", key):
                shutil.rmtree(old) if old.is_dir() and not old.is_symlink() else old.unlink()
        kept = JOB_CACHES / key
        kept.mkdir(exist_ok=True)
        runs = []
        for name in ("first", "second"):
            folder = tmp_path_factory.mktemp(f"install-{name}")
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder / "python")], check=True)  # setup-python
            runner = Runner(folder / "runner", template, folder / "python" / "bin")
            seconds, installed = timed_install(runner, steps, kept)
            assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
            runs.append((seconds, installed, runner))
    (first, first_out, _), (second, second_out, runner) = runs
    print(f"\nrehearsal: install step {first:.1f} s {warmth(first_out)}, then {second:.1f} s {warmth(second_out)} "
          "(a fresh runner each time)")
    added = runner.path_file.read_text().split()
    assert len(added) == 1, added
    return {"first": first, "second": second, "outputs": (first_out, second_out), "bin": Path(added[0])}


@pytest.fixture(scope="session")
def job_python(job_install) -> Path:
    """The bin folder of the venv the released install step made (on the second, warm runner)."""
    return job_install["bin"]


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


def test_the_install_step_takes_the_cpu_torch_and_the_second_run_only_links(job_install, record_property):
    """Both installs give the pinned CPU torch; the second, on a fresh runner, downloads and unpacks nothing."""
    first, second = job_install["outputs"]
    torch_line = f"+ torch=={environment.pins()['torch']}+cpu"
    for installed in (first, second):
        assert torch_line in [line.strip() for line in installed.stderr.splitlines()], installed.stderr[-3000:]
        assert "cu1" not in installed.stderr and "nvidia" not in installed.stderr.lower()
    assert "Prepared" not in second.stderr, second.stderr[-3000:]  # all from the kept cache
    assert "Installed" in second.stderr
    for name in ("first", "second"):  # the times, in the test's output and its report
        record_property(f"install_{name}_seconds", round(job_install[name], 2))
    print(f"install step: first run {job_install['first']:.1f} s {warmth(first)}, second {job_install['second']:.1f} s {warmth(second)}")


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
