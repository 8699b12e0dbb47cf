"""How long grading one submission takes, next to `python -c "import torch"`.

    .venv/bin/python scripts/benchmark.py [--runs 5] [--assignment ch03]

Runs the commands alternately, several times, and prints the median wall times and their
ratios to ``import torch``: ``grade`` (the hidden tests, as the Classroom job runs them) and
``check`` in a released template (the public tests, as a student runs them before pushing).
The submission is the reference solutions (every test runs to the end).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TORCH = "python -c 'import torch'"


def wall(command: list[str], cwd: Path = ROOT) -> float:
    """Seconds one command takes, start to exit."""
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--assignment", default="ch03")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        submission = Path(tmp) / "submission"
        target = submission / "exercises" / args.assignment
        target.mkdir(parents=True)
        for source in (ROOT / "solutions" / args.assignment).glob("*.py"):
            (target / source.name).write_text(source.read_text())
        template = Path(tmp) / "template"
        subprocess.run([sys.executable, "-m", "grader", "release", "--assignment", args.assignment, "--out", str(template)],
                       cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for source in target.glob("*.py"):
            (template / "exercises" / args.assignment / source.name).write_text(source.read_text())
        commands = {
            TORCH: ([sys.executable, "-c", "import torch"], ROOT),
            f"grade one {args.assignment} submission": (
                [sys.executable, "-m", "grader", "grade", str(submission), "--assignment", args.assignment,
                 "--json", str(Path(tmp) / "report.json"), "--quiet"], ROOT),
            "check it in its template": ([sys.executable, "-m", "grader", "check"], template),
        }
        for command, cwd in commands.values():  # warm the page cache for all
            wall(command, cwd)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, (command, cwd) in commands.items():
                times[name].append(wall(command, cwd))
    medians = {name: statistics.median(runs) for name, runs in times.items()}
    for name, runs in times.items():
        ratio = "" if name == TORCH else f"  ratio to import torch {medians[name] / medians[TORCH]:.2f}"
        print(f"{name:30s} median {medians[name]:.2f} s{ratio}  (runs: {', '.join(f'{x:.2f}' for x in runs)})")


if __name__ == "__main__":
    main()
