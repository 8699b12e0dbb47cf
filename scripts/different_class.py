"""A class of N different ch03 submissions, for timing ``batch`` as a real class costs:

    .venv/bin/python scripts/different_class.py FOLDER [-n 40]

Each student is the reference solutions with one mistake of ``project_tests/student_mistakes.toml``
(written as students write them), in turn, so that no two submissions are the same and most fail
somewhere (their diagnosis runs, as in a real class). Then, for example, paired with an older
checkout ``OLD`` (each run from its own folder, with the same environment)::

    cd OLD && .venv/bin/python -m grader batch FOLDER --assignment ch03 --csv /tmp/old/g.csv --jobs 2
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from project_tests.student_mistakes import MISTAKES  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("-n", type=int, default=40)
    args = parser.parse_args()
    solutions = {p.stem: p.read_text() for p in (ROOT / "solutions" / "ch03").glob("*.py")}
    mistakes = [m for m in MISTAKES if m[0] == "ch03" and solutions[m[1]].count(m[3]) == 1]
    for index in range(args.n):
        _, stem, _, old, new, _ = mistakes[index % len(mistakes)]
        student = args.folder / f"student{index:03d}" / "exercises" / "ch03"
        student.mkdir(parents=True)
        for name, text in solutions.items():
            (student / f"{name}.py").write_text(text.replace(old, new) if name == stem else text)
        if index >= len(mistakes):  # a second round: another module of the same student too
            _, stem2, _, old2, new2, _ = mistakes[(index * 7) % len(mistakes)]
            if stem2 != stem:
                (student / f"{stem2}.py").write_text(solutions[stem2].replace(old2, new2))
    print(f"{args.n} submissions in {args.folder} ({len(mistakes)} different mistakes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
