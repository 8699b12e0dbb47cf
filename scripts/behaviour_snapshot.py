"""What the grader says on a fixed set of submissions, written to a folder, so that a change meant to
keep behaviour (a restructuring) can be compared with the commit before it:

    .venv/bin/python scripts/behaviour_snapshot.py OUT [--class FOLDER] [--corpus DIFF ...]
    diff -r OUT_BEFORE OUT_AFTER

Written to OUT: ``solutions-<assignment>.json`` (the hidden grade's report of the reference
solutions) and ``demo-<assignment>.txt`` (what ``demo`` prints: the solutions and the bundled
sample), ``class.csv``, ``class-report.md`` and ``class-reports/`` (``batch`` over ``--class``, for
example a folder made by ``scripts/different_class.py``), ``public-check.txt`` (``check`` in a released template of ch03, its
terminal output), and ``unseen/`` and ``corpus-<name>/`` (``scripts/grade_unseen_mistakes.py``'s
feedback on the mistakes of ``project_tests/unseen_mistakes.toml`` and of each kept corpus named,
hidden and public: every module's score, diagnosis, failing checks and what a student reads).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = str(ROOT / ".venv" / "bin" / "python")


def write_readable_json(source: Path, target: Path) -> None:
    """A report as ``diff`` reads it best: one field a line, keys sorted (a report holds no timing or
    path of the run, so two runs of the same code write the same)."""
    target.write_text(json.dumps(json.loads(source.read_text()), indent=1, sort_keys=True) + "\n")


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, *args], cwd=cwd, capture_output=True, text=True, timeout=3600)


def grade(submission: Path, assignment: str, target: Path, scratch: Path) -> None:
    report = scratch / f"{target.stem}.json"
    proc = run("-m", "grader", "grade", str(submission), "--assignment", assignment, "--json", str(report), "--quiet")
    if not report.exists():
        raise SystemExit(f"grade of {submission} wrote no report:\n{proc.stderr[-2000:]}")
    write_readable_json(report, target)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--class", dest="class_folder", type=Path, help="a folder of ch03 submissions for batch")
    parser.add_argument("--corpus", type=Path, nargs="*", default=[], help="kept corpora (project_tests/fresh_mistakes/*.diff)")
    parser.add_argument("--no-unseen", action="store_true", help="leave out unseen_mistakes.toml")
    args = parser.parse_args()
    out = args.out.resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="behaviour-") as folder:
        scratch = Path(folder)
        for assignment in ("ch03", "d2l_attention"):
            solutions = scratch / f"solutions-{assignment}" / "exercises" / assignment
            shutil.copytree(ROOT / "solutions" / assignment, solutions)
            grade(solutions.parent.parent, assignment, out / f"solutions-{assignment}.json", scratch)
            demo = subprocess.run([PYTHON, "-m", "grader", "demo", "--assignment", assignment], cwd=ROOT, capture_output=True,
                                  text=True, timeout=900, env={"PATH": "/usr/bin:/bin", "COLUMNS": "110", "HOME": str(scratch)})
            (out / f"demo-{assignment}.txt").write_text(f"exit {demo.returncode}\n{demo.stdout}")
        release = scratch / "release"
        proc = run("-m", "grader", "release", "--assignment", "ch03", "--out", str(release))
        if proc.returncode == 0:
            for stem in (p.stem for p in (ROOT / "solutions" / "ch03").glob("*.py") if p.stem in {"causal", "self_attention_v1"}):
                shutil.copyfile(ROOT / "solutions" / "ch03" / f"{stem}.py", release / "exercises" / "ch03" / f"{stem}.py")
            check = subprocess.run([PYTHON, "-m", "grader", "check", "--assignment", "ch03"], cwd=release,
                                   capture_output=True, text=True, timeout=900, env={"PATH": "/usr/bin:/bin", "COLUMNS": "110"})
            (out / "public-check.txt").write_text(f"exit {check.returncode}\n{check.stdout}")
        if args.class_folder:
            csv = scratch / "class" / "class.csv"
            run("-m", "grader", "batch", str(args.class_folder.resolve()), "--assignment", "ch03", "--csv", str(csv), "--jobs", "2")
            shutil.copyfile(csv, out / "class.csv")
            shutil.copyfile(csv.parent / "class-report.md", out / "class-report.md")
            for student in sorted(p for p in (csv.parent / "ch03-reports").iterdir() if p.is_dir()):
                (out / "class-reports" / student.name).mkdir(parents=True)
                write_readable_json(student / "REPORT.json", out / "class-reports" / student.name / "REPORT.json")
                shutil.copyfile(student / "FEEDBACK.md", out / "class-reports" / student.name / "FEEDBACK.md")
        corpora = [("unseen", None)] * (not args.no_unseen) + [(f"corpus-{d.stem}", d) for d in args.corpus]
        for name, diff in corpora:
            extra = []
            if diff is not None:
                files = scratch / name
                run("-c", "import sys, pathlib; sys.path.insert(0, 'scripts'); import grade_unseen_mistakes as u;"
                    f" u.from_patch(pathlib.Path({str(diff.resolve())!r}), pathlib.Path({str(files)!r}))")
                extra = ["--folder", str(files)]
            proc = run("scripts/grade_unseen_mistakes.py", *extra, "--public", "1000", "--out", str(out / name))
            if proc.returncode != 0:
                raise SystemExit(f"{name}: {proc.stderr[-2000:]}")
            (out / name / "summary.txt").write_text(proc.stdout.replace(str(out), "OUT"))
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
