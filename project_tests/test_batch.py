"""``python -m grader batch``: a class folder in, a CSV, reports and a gradebook out.

One batch run (module fixture) over a class with a good, an empty, a broken, a tampered and
a hostile submission serves most tests; every student must appear with the right score.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader import manifest
from grader.batch import resume
from grader import rubric as rubrics
from grader.batch.grades_csv import NBGRADER_COLUMNS
from project_tests.helpers import ROOT, make_submission, stub_sources

ASSIGNMENT = "ch03"
RUBRIC = rubrics.load(ROOT / "tests" / ASSIGNMENT, ASSIGNMENT)
STEMS = [e.name for e in RUBRIC.exercises]
FIRST = RUBRIC.exercises[0]
FIRST_MAX = FIRST.max_score
WORKFLOW = ".github/workflows/classroom.yml"
PUBLIC_TEST = "public_tests/test_public.py"


def make_template(folder: Path) -> Path:
    """A released template: stubs, a workflow, a public test and a pyproject.toml."""
    make_submission(folder, ASSIGNMENT, stub_sources(ASSIGNMENT))
    files = {
        WORKFLOW: "on: push\njobs: {}\n",
        PUBLIC_TEST: "def test_nothing():\n    pass\n",
        "pyproject.toml": "[project]\nname = 'course'\n",
        "README.md": "# Exercises\n",
    }
    for path, text in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    return folder


def student(root: Path, template: Path, overrides: dict | None = None) -> Path:
    """The template's files plus the reference solutions (with ``overrides``)."""
    for path in template.rglob("*"):
        if path.is_file():
            target = root / path.relative_to(template)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    return make_submission(root, ASSIGNMENT, overrides)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Grade a whole class once; return the CSV rows by student, the output folder."""
    base = tmp_path_factory.mktemp("batch")
    template = make_template(base / "template")
    klass = base / "class"
    good = student(klass / "good", template)
    (good / "conftest.py").write_text("import pytest\n")
    (klass / "empty" / ".git").mkdir(parents=True)  # a repository with nothing in it: a student, graded 0
    (klass / "notes").mkdir()  # the instructor's own notes: neither a repository nor exercises/, not a student
    (klass / "notes" / "todo.txt").write_text("grade ch03\n")
    student(klass / "syntax", template, {FIRST.name: "def broken(:\n"})
    student(klass / "missing", template, {FIRST.name: None})
    tampered = student(klass / "tampered", template)
    (tampered / WORKFLOW).write_text("on: push\njobs: {steal: {}}\n")
    (tampered / PUBLIC_TEST).unlink()
    (tampered / ".github/workflows/extra.yml").write_text("on: push\n")
    hostile = student(klass / "hostile", template)
    (hostile / "exercises" / ASSIGNMENT / f"{FIRST.name}.py").unlink()
    os.mkfifo(hostile / "exercises" / ASSIGNMENT / f"{FIRST.name}.py")
    os.mkfifo(hostile / "sitecustomize.py")
    (hostile / WORKFLOW).unlink()
    (hostile / WORKFLOW).symlink_to("/etc/passwd")
    (klass / ".hidden").mkdir()  # not a student
    out = base / "out"
    course = base / "course"
    course.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(klass), "--assignment", ASSIGNMENT,
         "--csv", str(out / "grades.csv"), "--jobs", "2", "--template", str(template),
         "--gradebook", str(course), "--probe-timeout", "5"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(out / "grades.csv", newline="") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames
        rows = {row["student_id"]: row for row in reader}
    return {"header": header, "rows": rows, "out": out, "course": course, "log": proc.stdout + proc.stderr}


def test_csv_has_nbgrader_export_columns_then_exercises_flags_and_source(graded):
    assert graded["header"] == NBGRADER_COLUMNS + STEMS + ["flags", "folder", "commit", "committed_at",
                                                           "commits_after_deadline", "last_commit_after_deadline",
                                                           "isolation"]


def test_every_student_is_graded_and_nothing_else(graded):
    assert sorted(graded["rows"]) == ["empty", "good", "hostile", "missing", "syntax", "tampered"]
    assert "6 submissions" in graded["log"]
    assert "skipped notes: not a submission (neither a git repository nor exercises/ch03/ in it)" in graded["log"]


@pytest.mark.parametrize(
    "who, lost",
    [("good", 0.0), ("tampered", 0.0), ("empty", None), ("syntax", FIRST_MAX), ("missing", FIRST_MAX), ("hostile", FIRST_MAX)],
)
def test_scores(graded, who, lost):
    row = graded["rows"][who]
    total = RUBRIC.max_score
    expected = 0.0 if lost is None else total - lost
    assert float(row["score"]) == float(row["raw_score"]) == pytest.approx(expected)
    assert float(row["max_score"]) == total
    assert row["assignment"] == ASSIGNMENT and row["late_submission_penalty"] == "0.0"
    assert sum(float(row[s]) for s in STEMS) == pytest.approx(expected)
    if lost:
        assert float(row[FIRST.name]) == 0.0


def test_reports_are_written_per_student(graded):
    for who, row in graded["rows"].items():
        report = json.loads((graded["out"] / f"{ASSIGNMENT}-reports" / who / "REPORT.json").read_text())
        assert report["score"] == float(row["score"])
        assert [e["name"] for e in report["exercises"]] == STEMS


def test_flags(graded):
    flags = {who: row["flags"] for who, row in graded["rows"].items()}
    assert flags["good"] == "conftest.py tries to configure pytest or Python (ignored by the grader)"
    assert flags["empty"].count(" was removed (template file)") >= 2  # the workflow, the public test
    assert flags["syntax"] == flags["missing"] == ""
    assert f"{WORKFLOW} was changed from the template" in flags["tampered"]
    assert f"{PUBLIC_TEST} was removed (template file)" in flags["tampered"]
    assert ".github/workflows/extra.yml is a workflow that is not in the template" in flags["tampered"]
    assert "sitecustomize.py tries to configure" in flags["hostile"]
    assert f"{WORKFLOW} was replaced by something that is not a regular file" in flags["hostile"]


def test_gradebook_holds_the_same_scores(graded):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{graded['course'] / 'gradebook.db'}") as gradebook:
        assignment = gradebook.find_assignment(ASSIGNMENT)
        assert assignment.max_score == pytest.approx(RUBRIC.max_score)
        assert [nb.name for nb in assignment.notebooks] == STEMS or sorted(nb.name for nb in assignment.notebooks) == sorted(STEMS)
        for who, row in graded["rows"].items():
            assert gradebook.find_submission(ASSIGNMENT, who).score == pytest.approx(float(row["score"]))


def test_a_dead_grading_process_does_not_stop_the_batch(tmp_path):
    """The grading process of one submission dies: it gets a zero and a grader error."""
    klass = tmp_path / "class"
    make_submission(klass / "crash", ASSIGNMENT)
    make_submission(klass / "fine", ASSIGNMENT)
    script = (
        "import os, sys; from pathlib import Path; import grader.submission as s; real = s.take\n"
        "def dying(root, *a, **k):  # the grading process takes the submission, then dies\n"
        "    if Path(root).name == 'crash': os._exit(9)\n"
        "    return real(root, *a, **k)\n"
        "s.take = dying\n"
        "from grader.cli import main; sys.exit(main(sys.argv[1:]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, "batch", str(klass), "--assignment", ASSIGNMENT, "--csv", str(tmp_path / "g.csv")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r["student_id"]: r for r in csv.DictReader(open(tmp_path / "g.csv", newline=""))}
    assert float(rows["fine"]["score"]) == RUBRIC.max_score
    assert float(rows["crash"]["score"]) == 0.0
    assert "grader error: the grading process for this submission failed" in rows["crash"]["flags"]


def test_template_manifest_is_read_when_present(tmp_path):
    template = tmp_path / "template"
    (template / ".grader").mkdir(parents=True)
    (template / "a.txt").write_text("x")
    digest = hashlib.sha256(b"x").hexdigest()
    (template / ".grader" / "template.json").write_text(json.dumps({"files": {"a.txt": digest.upper()}}))
    assert manifest.of_template(template) == {"a.txt": digest}
    (template / ".grader" / "template.json").unlink()
    assert manifest.of_template(template) == {"a.txt": digest}  # hashed when there is no manifest


def test_csv_cells_cannot_run_as_formulas():
    from grader.model import Report
    from grader.batch.grades_csv import csv_row

    row = csv_row(ASSIGNMENT, [], "=cmd", Report(ASSIGNMENT, 0, 1, flags=["=HYPERLINK(1) x"]))
    assert row["student_id"] == "'=cmd" and row["flags"].startswith("'=")


def test_csv_row_cleans_the_text_it_shows():
    """A row is made from the report's scores, flags and grader errors alone: the text it shows
    goes through the one hygiene function (control and bidi characters out, one line each)."""
    from grader.model import Report
    from grader.batch.grades_csv import csv_row

    report = Report(ASSIGNMENT, 0, 1, flags=["a\x1b[2Jb\u202ec"], grader_errors=["first\x07 line\nsecond line"])
    row = csv_row(ASSIGNMENT, [], "id\x1b]52;c;x\x07", report)
    assert row["student_id"] == "id]52;c;x"
    assert row["flags"] == "a[2Jbc; grader error: first line"


def _family(root_pid: int) -> set[int]:
    """``root_pid`` and every process descended from it, now."""
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/stat") as handle:
                parents[int(name)] = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    family, frontier = {root_pid}, [root_pid]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in family]
        family.update(children)
        frontier += children
    return family


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                if handle.read().rsplit(")", 1)[1].split()[0] != "Z":
                    alive.add(pid)
        except OSError:
            continue
    return alive


def _wait_for(condition, seconds: float, what: str):
    end = time.monotonic() + seconds
    while not (found := condition()):
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.01)
    return found


def test_a_killed_batch_resumes_without_regrading_or_dropping_anyone(tmp_path):
    """Kill a batch (SIGKILL) once two grades are on disk: nothing it started
    survives, the CSV and reports hold every grade made so far, and the next run reuses them,
    regrades only what changed and grades the rest."""
    klass, out, course = tmp_path / "class", tmp_path / "out", tmp_path / "course"
    students = {"a_good": {}, "b_good": {}, "c_stub": {FIRST.name: stub_sources(ASSIGNMENT)[FIRST.name]},
                "d_empty": None, "e_good": {}, "f_good": {}}
    for name, overrides in students.items():
        if overrides is None:
            (klass / name / ".git").mkdir(parents=True)
        else:
            make_submission(klass / name, ASSIGNMENT, overrides)
    reports = out / "reports"
    command = [sys.executable, "-m", "grader", "batch", str(klass), "--assignment", ASSIGNMENT, "--csv",
               str(out / "grades.csv"), "--reports", str(reports), "--gradebook", str(course), "--jobs", "1",
               "--probe-timeout", "5"]
    course.mkdir()
    first = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # Two grades on disk, and the next submission in the sandbox: the batch, its grading
        # process, the zygote, its handler, a module's supervisor and its workers.
        family = _wait_for(lambda: len(list(reports.glob(f"*/{resume.GRADED}"))) >= 2 and len(f := _family(first.pid)) >= 6
                           and f, 300, "two grades and the next one under way")
        first.kill()
    finally:
        first.wait(timeout=60)
    _wait_for(lambda: not _alive(family), 30, "every process of the killed batch to end")

    done = {p.parent.name for p in reports.glob(f"*/{resume.GRADED}")}
    assert 2 <= len(done) < len(students), done
    with open(out / "grades.csv", newline="") as handle:
        in_csv = {row["student_id"] for row in csv.DictReader(handle)}
    # Every report marked reusable is in the CSV; at most one more grade (the kill can fall
    # between its CSV row and its mark), which the next run simply grades again.
    assert done <= in_csv and len(in_csv - done) <= 1, (done, in_csv)
    assert not (course / "gradebook.db").exists()  # written once, at the end, in one piece
    assert [p.name for p in out.rglob(".*") if p.name != resume.GRADED] == []  # no half-written file left
    written = {name: os.stat(reports / name / "REPORT.json").st_mtime_ns for name in done}
    (klass / "a_good" / "exercises" / ASSIGNMENT / f"{FIRST.name}.py").write_text(stub_sources(ASSIGNMENT)[FIRST.name])

    second = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-3000:]
    reused = done - {"a_good"}
    assert f"{len(reused)} unchanged since an earlier run" in second.stderr
    assert {name: os.stat(reports / name / "REPORT.json").st_mtime_ns for name in reused} == \
        {name: written[name] for name in reused}
    assert os.stat(reports / "a_good" / "REPORT.json").st_mtime_ns != written["a_good"]
    with open(out / "grades.csv", newline="") as handle:
        rows = {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)}
    full = RUBRIC.max_score
    assert rows == {"a_good": full - FIRST_MAX, "b_good": full, "c_stub": full - FIRST_MAX, "d_empty": 0.0,
                    "e_good": full, "f_good": full}
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        assert {s.student.id: s.score for s in gradebook.find_assignment(ASSIGNMENT).submissions} == pytest.approx(rows)


def test_a_class_of_symbolic_links_is_not_graded_silently(tmp_path):
    real = make_submission(tmp_path / "real" / "alice", ASSIGNMENT)
    klass = tmp_path / "class"
    klass.mkdir()
    (klass / "alice").symlink_to(real, target_is_directory=True)
    (klass / "notes.txt").write_text("not a student\n")
    proc = subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(klass), "--assignment", ASSIGNMENT, "--csv", str(tmp_path / "g.csv")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    out = " ".join((proc.stdout + proc.stderr).split())
    assert "skipped alice: a symbolic link (batch follows none; give it the real folders)" in out
    assert "skipped notes.txt: not a folder" in out
    assert "no submission folder under" in out and "nothing was graded" in out
    assert not (tmp_path / "g.csv").exists()


def test_a_rerun_rewrites_the_reused_students_feedback_before_grading_anyone(tmp_path):
    """A student whose grade is reused gets their feedback written as this run names them, before
    the first new grade: a rerun stopped early leaves no feedback of an earlier run behind."""
    klass, out = tmp_path / "class", tmp_path / "out"
    make_submission(klass / "a", ASSIGNMENT)
    command = [sys.executable, "-m", "grader", "batch", str(klass), "--assignment", ASSIGNMENT, "--csv",
               str(out / "grades.csv"), "--jobs", "1", "--probe-timeout", "5"]
    subprocess.run(command, cwd=ROOT, capture_output=True, timeout=300, check=True)
    feedback = out / f"{ASSIGNMENT}-reports" / "a" / "FEEDBACK.md"
    written = feedback.read_text()
    feedback.write_text("an earlier run's feedback\n")
    for name in ("b", "c"):
        make_submission(klass / name, ASSIGNMENT)
    batch = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        _wait_for(lambda: list((out / f"{ASSIGNMENT}-reports").glob(f"[bc]/{resume.GRADED}")), 300, "a new grade")
        os.killpg(batch.pid, signal.SIGINT)
        batch.communicate(timeout=120)
    finally:
        if batch.poll() is None:
            os.killpg(batch.pid, signal.SIGKILL)
    assert batch.returncode == 130
    assert feedback.read_text() == written


def test_ctrl_c_says_in_one_line_how_to_resume(tmp_path):
    """Ctrl-C (SIGINT to the whole foreground group, as a terminal sends it) once a grade is on disk."""
    klass, out = tmp_path / "class", tmp_path / "out"
    for name in ("a", "b", "c"):
        make_submission(klass / name, ASSIGNMENT)
    command = [sys.executable, "-m", "grader", "batch", str(klass), "--assignment", ASSIGNMENT, "--csv",
               str(out / "grades.csv"), "--jobs", "1", "--probe-timeout", "5"]
    batch = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        _wait_for(lambda: list((out / f"{ASSIGNMENT}-reports").glob(f"*/{resume.GRADED}")), 300, "a first grade")
        os.killpg(batch.pid, signal.SIGINT)
        _, stderr = batch.communicate(timeout=120)
    finally:
        if batch.poll() is None:
            os.killpg(batch.pid, signal.SIGKILL)
    assert batch.returncode == 130, stderr[-3000:]
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    said = [line for line in stderr.splitlines() if line.startswith("interrupted:")]
    assert len(said) == 1 and "run the same command again" in said[0] and "of 3 students' grades are on disk" in said[0]
    # Each grade on disk came with its feedback, written as the grade came in, not at the end.
    graded = [marker.parent for marker in (out / f"{ASSIGNMENT}-reports").glob(f"*/{resume.GRADED}")]
    assert graded
    for folder in graded:
        assert (folder / "FEEDBACK.md").read_text().startswith(f"# Feedback for {folder.name}\n")
        assert "<html" in (folder / "FEEDBACK.html").read_text()
