"""How long grading one submission takes, next to `python -c "import torch"`.

    .venv/bin/python scripts/benchmark.py [--runs 5] [--assignment ch03]

Runs both commands alternately, several times, and prints the median wall times and their
ratio. The submission is the reference solutions (every test runs to the end).
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


def wall(command: list[str]) -> float:
    """Seconds one command takes, start to exit."""
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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
        grade = [sys.executable, "-m", "grader", "grade", str(submission), "--assignment", args.assignment,
                 "--json", str(Path(tmp) / "report.json"), "--quiet"]
        torch_only = [sys.executable, "-c", "import torch"]
        wall(torch_only)  # warm the page cache for both
        wall(grade)
        grades, imports = [], []
        for _ in range(args.runs):
            imports.append(wall(torch_only))
            grades.append(wall(grade))
    g, i = statistics.median(grades), statistics.median(imports)
    print(f"python -c 'import torch'     median {i:.2f} s  (runs: {', '.join(f'{x:.2f}' for x in imports)})")
    print(f"grade one {args.assignment} submission  median {g:.2f} s  (runs: {', '.join(f'{x:.2f}' for x in grades)})")
    print(f"ratio grade / import torch   {g / i:.2f}")


if __name__ == "__main__":
    main()
