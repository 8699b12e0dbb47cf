"""Grade the mistakes of project_tests/unseen_mistakes.toml and write what a student would see.

    .venv/bin/python scripts/grade_unseen_mistakes.py [--probe-timeout 5] [--public 30] [--only ID ...]
    .venv/bin/python scripts/grade_unseen_mistakes.py --folder FRESH --out build/fresh_mistakes --public 1000

``--folder`` grades a corpus kept as files instead (a fresh one, written after the diagnosis's
last change, before anyone reads the diagnosis's answers): one folder per mistake, named
``NN-<assignment>-<module>-<slug>``, holding ``exercises/<assignment>/<module>.py`` (the whole
mistaken module; every other module is the reference's), and ``INDEX.md`` saying what each is.

Each mistake is the reference solutions of its assignment with one text replacement, laid
out as a student repository (``exercises/<assignment>/<stem>.py``). All of an assignment's
mistakes are graded with the hidden suite in one run (``project_tests.helpers.grade_many``,
one sandbox, as the bulk regrade does). A sample of them is also put into a released template
(``python -m grader release``) and checked with the public tests, all of one assignment in one
process that runs the template's own ``check`` with one runner.

Written to ``build/unseen_mistakes/`` (gitignored): ``feedback.json`` (per mistake: the
module's score, diagnosis and failing checks, hidden and public) and ``feedback.md`` (the
same as a student reads it: the job summary's block for the module, the terminal's for check).
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.model import Report  # noqa: E402
from grader.reports import summary, terminal  # noqa: E402
from grader.reports.common import diagnosis_line  # noqa: E402
from project_tests.helpers import PYTHON, grade_many, make_submission, mutate, solution_sources  # noqa: E402

DATA = ROOT / "project_tests" / "unseen_mistakes.toml"
OUT = ROOT / "build" / "unseen_mistakes"

# Run in a released template (its own grader package): the public check of many submissions
# with one runner, as `python -m grader check` does for one. Prints {root: report} as JSON.
CHECK_MANY = """
import json, sys
from pathlib import Path
from grader import environment
from grader.assignment import Assignment
from grader.check import check
from grader.sandbox.local import runner_for_this_machine
from grader.settings import Settings

roots = [Path(p) for p in json.loads(sys.argv[2])]
settings = Settings(probe_timeout=float(sys.argv[3]))
assignment = Assignment.public(sys.argv[1], settings)
runner = runner_for_this_machine(settings.workers)
reports = {}
try:
    with environment.verified(runner, settings):
        for root in roots:
            reports[str(root)] = check(root, assignment, settings, runner).to_dict()
finally:
    runner.close()
print(json.dumps(reports))
"""


def load() -> list[dict]:
    """The mistakes, each checked: its ``old`` occurs exactly once in its module."""
    mistakes = tomllib.loads(DATA.read_text())["mistake"]
    for m in mistakes:
        mutate(solution_sources(m["assignment"])[m["module"]], m["old"], m["new"])
    return mistakes


def public_sample(mistakes: list[dict], size: int) -> list[dict]:
    """``size`` mistakes spread over every module: round-robin over the modules, in file order."""
    by_module: dict[tuple[str, str], list[dict]] = {}
    for m in mistakes:
        by_module.setdefault((m["assignment"], m["module"]), []).append(m)
    chosen, queues = [], list(by_module.values())
    while len(chosen) < min(size, len(mistakes)):
        for queue in queues:
            if queue and len(chosen) < size:
                chosen.append(queue.pop(0))
    return chosen


def from_folder(folder: Path) -> list[dict]:
    """The mistakes of a corpus kept as files (see the module docstring)."""
    mistakes = []
    for case in sorted(p for p in folder.iterdir() if p.is_dir()):
        for path in sorted(case.glob("exercises/*/*.py")):
            assignment, stem = path.parent.name, path.stem
            mistakes.append({"id": case.name, "assignment": assignment, "module": stem, "source": path.read_text(),
                             "why": f"see {folder.name}/INDEX.md", "line_hint": ""})
    return mistakes


def from_patch(diff: Path, folder: Path) -> list[dict]:
    """A kept corpus (``project_tests/fresh_mistakes/<date>.diff``: its patch against the solutions)
    rebuilt in ``folder``, then read as :func:`from_folder` reads one."""
    text = diff.read_text()
    for line in text.splitlines():
        if line.startswith("+++ b/"):
            path = Path(line[len("+++ b/"):].split("\t")[0])
            target = folder / path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / "solutions" / path.parent.name / path.name, target)
    subprocess.run(["patch", "-s", "-p1", "-d", str(folder)], input=text, text=True, check=True, timeout=120)
    return from_folder(folder)


def edited(m: dict) -> str:
    if "source" in m:
        return m["source"]
    return mutate(solution_sources(m["assignment"])[m["module"]], m["old"], m["new"])


def grade_hidden(mistakes: list[dict], base: Path, timeout: float) -> dict[str, dict]:
    """The hidden grade's report of every mistake, by id (one grading run per assignment)."""
    reports = {}
    for assignment in sorted({m["assignment"] for m in mistakes}):
        roots = {make_submission(base / "hidden" / m["id"], assignment, {m["module"]: edited(m)}): m["id"]
                 for m in mistakes if m["assignment"] == assignment}
        graded = grade_many(list(roots), assignment, "--probe-timeout", str(timeout), timeout=3600)
        reports.update({roots[root]: report for root, report in graded.items()})
    return reports


def release(assignment: str, base: Path) -> Path:
    """A released template of ``assignment`` (through the real command line)."""
    out = base / "release" / assignment
    proc = subprocess.run([PYTHON, "-m", "grader", "release", "--assignment", assignment, "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"release of {assignment} failed:\n{proc.stderr[-3000:]}")
    return out


def check_public(mistakes: list[dict], base: Path, timeout: float) -> dict[str, dict]:
    """The public check's report of every mistake, by id: each in its own copy of the released
    template, with the student's edited module; one checking process per assignment."""
    reports = {}
    for assignment in sorted({m["assignment"] for m in mistakes}):
        template = release(assignment, base)
        roots = {}
        for m in (m for m in mistakes if m["assignment"] == assignment):
            copy = base / "public" / m["id"]
            shutil.copytree(template, copy)
            for stem, text in solution_sources(assignment).items():  # the student's finished work...
                (copy / "exercises" / assignment / f"{stem}.py").write_text(text)
            (copy / "exercises" / assignment / f"{m['module']}.py").write_text(edited(m))  # ...with the mistake
            roots[str(copy)] = m["id"]
        # Run from a copy: the release is shared with other tests, which read it as release made it.
        runner = base / "public-runner" / assignment
        shutil.copytree(template, runner, dirs_exist_ok=True)
        proc = subprocess.run([PYTHON, "-c", CHECK_MANY, assignment, json.dumps(list(roots)), str(timeout)],
                              cwd=runner, capture_output=True, text=True, timeout=3600)
        if proc.returncode != 0:
            raise SystemExit(f"public check of {assignment} failed:\n{proc.stderr[-3000:]}")
        graded = json.loads(proc.stdout.splitlines()[-1])
        reports.update({roots[root]: report for root, report in graded.items()})
    return reports


def module_view(report: dict, stem: str) -> dict:
    """What the report says about the mistaken module, and which other modules lost points."""
    module = next(e for e in report["exercises"] if e["name"] == stem)
    failing = [{"name": t["name"], "status": t["status"], "message": t["message"],
                "hint": (t.get("feedback") or {}).get("hint", "")} for t in module["tests"] if t["status"] != "passed"]
    return {
        "score": module["score"], "max_score": module["max_score"], "message": module["message"],
        "diagnosis": module["diagnosis"], "failing": failing,
        "other_modules_failing": [e["name"] for e in report["exercises"] if e["name"] != stem and e["score"] < e["max_score"]],
        "other_modules_feedback": {e["name"]: other_feedback(e) for e in report["exercises"]
                                   if e["name"] != stem and e["score"] < e["max_score"]},
        "grader_errors": report["grader_errors"],
    }


def shows_cause(view: dict, line_hint: str) -> bool:
    """A mechanical stand-in for a reader's "right": the diagnosis names a concept, or shows the
    mistaken line with its code (``line_hint`` in one of the lines it quotes: the line that
    computes the differing step, the origin, the lines that make what it uses, its inputs)."""
    diagnosis = view.get("diagnosis") or {}
    if diagnosis.get("concepts"):
        return True
    norm = lambda text: " ".join(str(text).split())  # noqa: E731
    quoted = [diagnosis.get("code", ""), diagnosis.get("origin_code", ""),
              *(line.split(": ", 2)[-1] for line in diagnosis.get("made") or []),
              *(line.split(": ", 1)[-1] for line in diagnosis.get("inputs") or [])]
    return any(norm(line_hint) in norm(code) for code in quoted if code)


def other_feedback(exercise: dict) -> str:
    """Another module's feedback in one line: its diagnosis, else its first failing check's message."""
    line = diagnosis_line(Report.from_dict({"assignment": "", "score": 0, "max_score": 0, "exercises": [exercise]}).exercises[0].diagnosis)
    failing = [t for t in exercise["tests"] if t["status"] != "passed"]
    line = line or next((t["message"] for t in failing), exercise["message"])
    hints = dict.fromkeys((t.get("feedback") or {}).get("hint", "") for t in failing)
    return " ".join([line, *(f"Hint: {h}" for h in hints if h and h not in line)])


def hidden_text(report: dict, stem: str) -> str:
    """The job summary's block for the module (what a student reads on GitHub)."""
    exercise = next(e for e in Report.from_dict(report).exercises if e.name == stem)
    if all(t.status == "passed" for t in exercise.tests):
        return f"{stem}.py: full points ({exercise.score:g} / {exercise.max_score:g})\n"
    return "\n".join(summary.exercise_feedback(exercise))


def public_text(report: dict, stem: str) -> str:
    """The terminal's output of ``check`` for the module (what a student reads locally)."""
    from rich.console import Console

    whole = Report.from_dict(report)
    shown = Report(whole.assignment, 0, 0, [e for e in whole.exercises if e.name == stem])
    buffer = io.StringIO()
    terminal.show(shown, console=Console(file=buffer, width=110, color_system=None, highlight=False), public=True)
    return buffer.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--probe-timeout", type=float, default=5.0)
    parser.add_argument("--public", type=int, default=30, help="how many mistakes also get the public check (0: none)")
    parser.add_argument("--only", nargs="*", help="grade only these ids")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--folder", type=Path, help="a corpus kept as files instead of the TOML's replacements")
    args = parser.parse_args()

    mistakes = from_folder(args.folder) if args.folder else load()
    if args.only:
        mistakes = [m for m in mistakes if m["id"] in set(args.only)]
    sample = public_sample(mistakes, args.public)
    with tempfile.TemporaryDirectory(prefix="unseen-mistakes-") as folder:
        base = Path(folder)
        hidden = grade_hidden(mistakes, base, args.probe_timeout)
        public = check_public(sample, base, args.probe_timeout) if sample else {}

    results, lines = [], ["# Unseen mistakes: the feedback a student sees", ""]
    for m in mistakes:
        entry = {key: m[key] for key in ("id", "assignment", "module", "why", "line_hint")}
        entry["hidden"] = module_view(hidden[m["id"]], m["module"])
        lines += [f"## {m['id']} ({m['assignment']}/{m['module']}.py)", "", f"*Mistake*: {m['why']}  ",
                  f"*Mistaken line*: `{m['line_hint']}`", "", f"*Score*: {entry['hidden']['score']:g} / "
                  f"{entry['hidden']['max_score']:g}", "", "### Hidden grade", "", hidden_text(hidden[m["id"]], m["module"])]
        others = entry["hidden"]["other_modules_failing"]
        for name in others:
            lines += [f"(also lost points: {name}.py: {entry['hidden']['other_modules_feedback'][name]})", ""]
        if m["id"] in public:
            entry["public"] = module_view(public[m["id"]], m["module"])
            lines += ["### Public check", "", "```", public_text(public[m["id"]], m["module"]).rstrip(), "```", ""]
            for name, text in entry["public"]["other_modules_feedback"].items():
                lines += [f"(also failing the public check: {name}.py: {text})", ""]
        results.append(entry)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "feedback.json").write_text(json.dumps(results, indent=1) + "\n")
    (args.out / "feedback.md").write_text("\n".join(lines) + "\n")
    full = [r["id"] for r in results if r["hidden"]["score"] == r["hidden"]["max_score"]]
    print(f"{len(results)} mistakes graded ({len(public)} also checked publicly); full points in the hidden grade: {full}")
    for side in ("hidden", "public"):
        views = [(r[side], r["line_hint"]) for r in results if side in r and r["line_hint"]]  # a folder's: judged by reading
        shown = sum(shows_cause(view, hint) for view, hint in views)
        print(f"{side}: the concept or the mistaken line with its code for {shown} of {len(views)}")
    print(f"feedback: {args.out / 'feedback.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
