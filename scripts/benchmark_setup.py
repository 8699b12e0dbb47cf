"""How long the Classroom job's set-up takes, cold and warm, next to `python -c "import torch"`.

    .venv/bin/python scripts/benchmark_setup.py [--runs 3] [--no-pip] [--no-restore]

Each install runs on a fresh stand-in runner: a fresh Python (what setup-python gives), a
fresh ``$RUNNER_TEMP`` with the grader's ``grader/requirements.txt`` where the job's checkout
puts it, and a cache folder that starts empty (cold) or is kept from the run before (warm, as
``actions/cache`` restores it on the next push). It times, and prints as medians:

- the install step of ``template/.github/workflows/classroom.yml`` exactly as written (``uv venv``
  and ``uv pip install`` from uv's cache), cold once and warm ``--runs`` times;
- the install step the workflow had before (``pip install`` with pip's download cache kept),
  cold once and warm ``--runs`` times (``--no-pip`` leaves it out: about a minute);
- what ``actions/cache`` itself does on a hit, here without the download: unpacking a zstd tar
  of uv's cache, and of a finished venv (the other candidate: caching the venv itself)
  (``--no-restore`` leaves it out);
- the grade step (``python -m grader grade`` on the reference solutions, with the venv the
  install step made) and ``python -c "import torch"`` in that venv.

The PyTorch CPU index is dropped, as in the rehearsal (offline here): this machine's torch
wheel is found through ``PIP_FIND_LINKS`` (handed to uv as ``UV_FIND_LINKS``); other
packages come from PyPI on a cold run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from grader import environment  # noqa: E402

WORKFLOW = ROOT / "template" / ".github" / "workflows" / "classroom.yml"
# The install step of the workflow before uv (CPU index dropped, as for the uv step).
PIP_STEP = 'python -m pip install --disable-pip-version-check -r "$RUNNER_TEMP/grader/grader/requirements.txt"'


UV_NAMES = {"PIP_FIND_LINKS": "UV_FIND_LINKS", "PIP_INDEX_URL": "UV_INDEX_URL", "PIP_EXTRA_INDEX_URL": "UV_EXTRA_INDEX_URL"}


def uv_binary() -> str:
    from uv import find_uv_bin  # pinned in requirements.txt

    return find_uv_bin()


def install_step() -> dict:
    """The workflow's install step, the CPU index (unreachable offline) dropped."""
    steps = yaml.safe_load(WORKFLOW.read_text())["jobs"]["run-autograding-tests"]["steps"]
    step = next(s for s in steps if s.get("name", "").startswith("Install"))
    return {**step, "run": step["run"].replace("--extra-index-url __CPU_INDEX__", "")}


class Runner:
    """A fresh stand-in for a GitHub runner: a Python on PATH, RUNNER_TEMP, the grader's list."""

    def __init__(self, folder: Path, cache: Path):
        self.temp, tools = folder / "runner-temp", folder / "bin"
        (self.temp / "grader" / "grader").mkdir(parents=True)
        tools.mkdir()
        shutil.copy(environment.REQUIREMENTS, self.temp / "grader" / "grader" / "requirements.txt")
        subprocess.run([sys.executable, "-m", "venv", str(folder / "python")], check=True)  # what setup-python gives
        (tools / "uv").symlink_to(uv_binary())  # what setup-uv gives
        self.path_file = self.temp / "github-path"
        self.env = {
            "PATH": os.pathsep.join([str(folder / "python" / "bin"), str(tools), "/usr/local/bin", "/usr/bin", "/bin"]),
            "HOME": str(folder / "home"), "LANG": "C.UTF-8", "RUNNER_TEMP": str(self.temp), "GITHUB_PATH": str(self.path_file),
            "PIP_CACHE_DIR": str(cache),
            **{k: v for k, v in os.environ.items() if k.startswith("PIP_") and k != "PIP_CACHE_DIR"},
            **{k: v for k, v in os.environ.items() if k in ("SSL_CERT_FILE", "SSL_CERT_DIR")},
        }
        self.env |= {uv: os.environ[pip] for pip, uv in UV_NAMES.items() if pip in os.environ}  # pip's settings, for uv

    def run(self, step: dict) -> float:
        """Seconds the step's script takes (bash -eo pipefail, as Actions runs it)."""
        env = {**self.env, **{k: v.replace("${{ runner.temp }}", str(self.temp)) for k, v in step.get("env", {}).items()}}
        start = time.perf_counter()
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                              env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if proc.returncode:
            sys.exit(f"install failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
        return seconds

    def python(self) -> str:
        """The python the grade step would run (the venv on GITHUB_PATH, else the runner's)."""
        added = self.path_file.read_text().split() if self.path_file.exists() else []
        return str(Path(added[-1] if added else self.env["PATH"].split(os.pathsep)[0]) / "python")


def installs(base: Path, name: str, step: dict, runs: int, cache_env: str = "") -> tuple[float, list[float], Runner]:
    """One cold install (empty cache), then ``runs`` warm ones (the cache kept), each on a fresh runner."""
    cache = base / f"{name}-cache"
    times, runner = [], None
    for i in range(runs + 1):
        runner = Runner(base / f"{name}-{i}", cache)
        if cache_env:
            step = {**step, "env": {**step.get("env", {}), cache_env: str(cache)}}
        times.append(runner.run(step))
        print(f"  {name} install {'cold' if i == 0 else 'warm'}: {times[-1]:.1f} s", file=sys.stderr)
    return times[0], times[1:], runner


def wall(command: list[str], cwd: Path = ROOT) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def restore(base: Path, folder: Path, name: str, runs: int) -> list[float]:
    """Seconds to unpack ``folder`` from a zstd tar, as actions/cache does on a hit (no download here)."""
    archive = base / f"{name}.tar.zst"
    subprocess.run(["tar", "--zstd", "-cf", str(archive), "-C", str(folder.parent), folder.name], check=True)
    print(f"  {name}: {archive.stat().st_size / 2**20:.0f} MiB compressed", file=sys.stderr)
    times = []
    for i in range(runs):
        target = base / f"{name}-restored-{i}"
        target.mkdir()
        times.append(wall(["tar", "--zstd", "-xf", str(archive), "-C", str(target)]))
        shutil.rmtree(target)
    archive.unlink()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="warm installs (and other timings) per method")
    parser.add_argument("--assignment", default="ch03")
    parser.add_argument("--no-pip", action="store_true", help="leave out the pip step the workflow had before")
    parser.add_argument("--no-restore", action="store_true", help="leave out the cache-unpacking timings")
    args = parser.parse_args()
    rows: list[tuple[str, list[float]]] = []
    with tempfile.TemporaryDirectory(dir=ROOT / "build" if (ROOT / "build").is_dir() else None) as tmp:
        base = Path(tmp)
        uv_cold, uv_warm, runner = installs(base, "uv", install_step(), args.runs, cache_env="UV_CACHE_DIR")
        rows += [("install step, uv, cold cache (workflow now)", [uv_cold]),
                 ("install step, uv, warm cache (workflow now)", uv_warm)]
        if not args.no_pip:
            pip_cold, pip_warm, _ = installs(base, "pip", {"run": PIP_STEP}, args.runs)
            rows += [("install step, pip, cold cache (workflow before)", [pip_cold]),
                     ("install step, pip, warm cache (workflow before)", pip_warm)]
        if not args.no_restore:
            rows += [("unpack uv's cache (actions/cache hit, no download)", restore(base, base / "uv-cache", "uv-cache", args.runs)),
                     ("unpack a finished venv (the cached-venv option)", restore(base, runner.temp / "venv", "venv", args.runs))]
        python = runner.python()
        submission = base / "submission" / "exercises" / args.assignment
        submission.mkdir(parents=True)
        for source in (ROOT / "solutions" / args.assignment).glob("*.py"):
            shutil.copy(source, submission / source.name)
        grade = [python, "-m", "grader", "grade", str(submission.parent.parent), "--assignment", args.assignment,
                 "--json", str(base / "report.json"), "--quiet"]
        torch = [python, "-c", "import torch"]
        wall(torch)  # warm the page cache
        grade_times, torch_times = [], []
        for _ in range(args.runs):
            torch_times.append(wall(torch))
            grade_times.append(wall(grade))
        rows += [(f"grade step ({args.assignment}, reference solutions)", grade_times), ('python -c "import torch"', torch_times)]
    unit = statistics.median(torch_times)
    print(f"{'median of the runs':<56} {'seconds':>8} {'× import torch':>15}  runs")
    for name, times in rows:
        median = statistics.median(times)
        print(f"{name:<56} {median:>8.1f} {median / unit:>15.1f}  {len(times)}")


if __name__ == "__main__":
    main()
