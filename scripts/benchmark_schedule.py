"""``batch`` on a class of different submissions, this checkout against another commit, paired.

    .venv/bin/python scripts/benchmark_schedule.py --vs 6f1d716 [-n 40] [--runs 5] [--jobs 2] [--cold]

Makes a class of N different ch03 submissions (``scripts/different_class.py``: the reference
solutions with one student mistake each, so most fail somewhere and are diagnosed), checks out
``--vs`` in a temporary git worktree (sharing this checkout's ``.venv``), and times ``python -m
grader batch`` on the class from each checkout in turn (this, then the other, ``--runs`` times;
each run writes into a fresh folder, so nothing is reused). Each side also grades a class of one,
in turn, so that a further submission's cost can be told from the start-up every run pays once
(importing torch, starting the sandbox, collecting the suite, the class report's pictures).

Python's bytecode cache is kept, as on an instructor's machine after its first batch (each side
writes its own in a first, untimed run), even where the calling shell sets
``PYTHONDONTWRITEBYTECODE`` (this project's machines do: there every run compiled the grader, the
suite and the references afresh, 0.1 s and more of a run). ``--cold`` compiles the checkout's own
code in every run instead, as those runs did (a first run after an update).

Prints, per side, the medians of the wall time and of the CPU time (the command and every process
it waited for), a further submission's wall time ((class - class of one) / (N - 1)), and the
ratios this/other taken pair by pair. Quote figures only from a quiet machine: the two sides share
its cores, and a busy machine's load moves one run and not the next.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv" / "bin" / "python"


def environment(checkout: Path, cold: bool) -> dict[str, str]:
    """The batch's environment: Python's bytecode cache kept (beside the sources), as on an
    instructor's machine after its first run, whatever this shell says; or, ``cold``, none kept
    for the checkout's own code (the grader, the suite, the references: its ``__pycache__``
    folders are removed first, and none is written), so that each run compiles it afresh, as
    this project's earlier figures did. The libraries' bytecode (torch's) is read either way."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    if cold:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        for cache in [p for p in checkout.rglob("__pycache__") if ".venv" not in p.relative_to(checkout).parts]:
            shutil.rmtree(cache, ignore_errors=True)
    return env


def timed(checkout: Path, klass: Path, out: Path, jobs: int, cold: bool = False) -> tuple[float, float]:
    """Wall and CPU seconds of one ``batch`` of ``klass`` run from ``checkout``."""
    env = environment(checkout, cold)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run([str(PYTHON), "-m", "grader", "batch", str(klass), "--assignment", "ch03",
                           "--csv", str(out / "grades.csv"), "--jobs", str(jobs)],
                          cwd=checkout, capture_output=True, text=True, timeout=3600, env=env)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0 or " graded in " not in proc.stdout + proc.stderr:
        raise SystemExit(f"batch from {checkout} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vs", required=True, help="the commit to compare with (a worktree of it is made)")
    parser.add_argument("-n", type=int, default=40, help="submissions in the class")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--cold", action="store_true",
                        help="compile the checkout's own code afresh in every run (no bytecode cache kept for it), as this project's earlier figures did")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="benchmark-schedule-") as folder:
        base = Path(folder)
        klass, one = base / "class", base / "one"
        subprocess.run([str(PYTHON), str(ROOT / "scripts" / "different_class.py"), str(klass), "-n", str(args.n)],
                       check=True, capture_output=True)
        one.mkdir()
        shutil.copytree(klass / sorted(os.listdir(klass))[0], one / "student000")
        other = base / "other"
        subprocess.run(["git", "worktree", "add", "--detach", str(other), args.vs], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            (other / ".venv").symlink_to(ROOT / ".venv")
            sides = {"this": ROOT, "other": other}
            runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
            count = 0
            for name, checkout in sides.items():  # the page cache warm for both, and each side's bytecode cache written
                timed(checkout, one, base / f"warm-up-{name}", args.jobs)
            for run in range(args.runs):
                for name, checkout in sides.items():
                    for size, folder in (("class", klass), ("one", one)):
                        count += 1
                        runs.setdefault((name, size), []).append(
                            timed(checkout, folder, base / f"out{count}", args.jobs, args.cold))
                print(f"run {run + 1}: " + ", ".join(f"{name} {runs[(name, 'class')][-1][0]:.1f} s" for name in sides),
                      file=sys.stderr)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=ROOT, capture_output=True)
    median = statistics.median
    print(f"batch --jobs {args.jobs}, {args.n} different ch03 submissions, {args.runs} runs each, in turn "
          f"(this checkout against {args.vs}; bytecode {'compiled afresh in every run' if args.cold else 'cached'}):")
    further = {}
    for name in ("this", "other"):
        walls = [wall for wall, _ in runs[(name, "class")]]
        ones = [wall for wall, _ in runs[(name, "one")]]
        further[name] = [(w - o) / (args.n - 1) for w, o in zip(walls, ones)]
        print(f"  {name:5}: wall {median(walls):.2f} s, CPU {median(c for _, c in runs[(name, 'class')]):.2f} s; "
              f"class of one {median(ones):.2f} s; a further submission {median(further[name]):.3f} s")
    ratio = [a / b for a, b in zip(further["this"], further["other"])]
    wall_ratio = [a[0] / b[0] for a, b in zip(runs[("this", "class")], runs[("other", "class")])]
    print(f"  this/other, pair by pair: wall {median(wall_ratio):.2f} ({min(wall_ratio):.2f}-{max(wall_ratio):.2f}), "
          f"a further submission {median(ratio):.2f} ({min(ratio):.2f}-{max(ratio):.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
