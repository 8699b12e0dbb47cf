"""A class as GitHub Classroom collects it, regraded through the real ``batch`` command line.

``gh classroom clone student-repos`` makes ``<slug>-submissions/<slug>-<login>/``, one git
repository per student, each starting with Classroom's own "Initial commit" of the template (by
the Classroom bot, before the student accepted). The class here: a student on time, one who
committed only after the deadline, one who edited the workflow before it, one who never
committed, one who broke working code after it, and the instructor's notes beside them. Then
the same class again under another root name, into the same gradebook.
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader import rubric as rubrics
from project_tests.helpers import ROOT, solution_sources, stub_sources

pytestmark = pytest.mark.end_to_end

ASSIGNMENT = "ch03"
FULL = rubrics.load(ROOT / "tests" / ASSIGNMENT, ASSIGNMENT).max_score
DEADLINE = "2026-03-01T23:59:00+01:00"
BEFORE, AFTER, LATER = "2026-02-20T18:00:00+01:00", "2026-03-02T09:30:00+01:00", "2026-03-03T11:00:00+00:00"
WORKFLOW = ".github/workflows/classroom.yml"
SLUG = "attention-ch03"


def git(repo: Path, *args: str, when: str, who: str = "Student <student@example.org>") -> None:
    name, email = who[:-1].split(" <")
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email,
           "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True)


def write(folder: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)


def template_files() -> dict[str, str]:
    """What the released template holds (a small one: the stubs, a workflow, a public test, pytest.ini)."""
    files = {f"exercises/{ASSIGNMENT}/{stem}.py": text for stem, text in stub_sources(ASSIGNMENT).items()}
    files |= {WORKFLOW: "name: Autograding Tests\non: push\njobs: {}\n", "public_tests/test_public.py": "def test_x():\n    pass\n",
              "pytest.ini": "[pytest]\ntestpaths = public_tests\n", "README.md": "# Attention\n"}
    return files


def accepted(root: Path, login: str) -> Path:
    """A repository as Classroom makes it when ``login`` accepts: the template's initial commit."""
    repo = root / f"{SLUG}-{login}"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main", when=BEFORE)
    write(repo, template_files())
    git(repo, "add", "-A", when=BEFORE)
    git(repo, "commit", "-q", "-m", "Initial commit", when="2026-02-01T08:00:00+00:00",
        who="github-classroom[bot] <66690702+github-classroom[bot]@users.noreply.github.com>")
    return repo


def solved(repo: Path, when: str, changes: dict[str, str] | None = None) -> None:
    write(repo, {f"exercises/{ASSIGNMENT}/{stem}.py": text for stem, text in solution_sources(ASSIGNMENT).items()} | (changes or {}))
    git(repo, "commit", "-q", "-am", "my work", when=when)


@pytest.fixture(scope="module")
def classroom(tmp_path_factory):
    base = tmp_path_factory.mktemp("classroom")
    template = base / "template"
    write(template, template_files())
    root = base / f"{SLUG}-submissions"
    solved(accepted(root, "alice"), BEFORE)
    solved(accepted(root, "bob"), AFTER)  # committed only after the deadline
    solved(accepted(root, "carol"), BEFORE, {WORKFLOW: "name: Autograding Tests\non: push\njobs: {fake: {}}\n"})
    accepted(root, "dave")  # never committed
    erin = accepted(root, "erin")
    solved(erin, BEFORE)
    (erin / "exercises" / ASSIGNMENT / "causal.py").write_text("broken(\n")  # broke working code after the deadline
    git(erin, "commit", "-q", "-am", "oops", when=AFTER)
    git(erin, "commit", "-q", "--allow-empty", "-m", "later", when=LATER)
    write(root / "notes", {"todo.md": "remember the late policy\n"})  # the instructor's notes: not a student
    course = base / "course"
    course.mkdir()
    return {"base": base, "root": root, "template": template, "course": course}


def batch(root: Path, out: Path, course: Path, template: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(root), "--assignment", ASSIGNMENT, "--csv", str(out / "grades.csv"),
         "--deadline", DEADLINE, "--template", str(template), "--gradebook", str(course), "--probe-timeout", "5", *extra],
        cwd=ROOT, capture_output=True, text=True, timeout=600)


def rows(out: Path) -> dict[str, dict[str, str]]:
    with open(out / "grades.csv", newline="") as handle:
        return {row["student_id"]: row for row in csv.DictReader(handle)}


@pytest.fixture(scope="module")
def graded(classroom):
    out = classroom["base"] / "out"
    proc = batch(classroom["root"], out, classroom["course"], classroom["template"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"out": out, "rows": rows(out), "log": proc.stderr}


def test_only_students_are_graded_and_named_by_login(graded):
    assert sorted(graded["rows"]) == ["alice", "bob", "carol", "dave", "erin"]
    assert "skipped notes: not a submission" in graded["log"]
    assert graded["rows"]["alice"]["folder"] == f"{SLUG}-alice"


def test_work_at_the_deadline_is_graded_and_later_commits_are_said(graded):
    alice, erin = graded["rows"]["alice"], graded["rows"]["erin"]
    assert float(alice["score"]) == float(erin["score"]) == FULL  # erin's later break does not count
    assert alice["commits_after_deadline"] == "" and alice["committed_at"] == BEFORE
    assert erin["commits_after_deadline"] == "2" and erin["last_commit_after_deadline"] == LATER
    feedback = (graded["out"] / f"{ASSIGNMENT}-reports" / f"{SLUG}-erin" / "FEEDBACK.md").read_text()
    assert "2 commits after the deadline" in feedback and "not graded" in feedback and "2026-03-03T11:00:00+00:00" in feedback


def test_no_work_before_the_deadline_is_said_so_not_not_attempted(graded):
    bob, dave = graded["rows"]["bob"], graded["rows"]["dave"]
    assert float(bob["score"]) == float(dave["score"]) == 0.0
    assert "no work committed before the deadline" in bob["flags"] and "no work committed before the deadline" in dave["flags"]
    assert bob["commits_after_deadline"] == "1" and bob["last_commit_after_deadline"] == AFTER
    assert dave["commits_after_deadline"] == ""
    reports = graded["out"] / f"{ASSIGNMENT}-reports"
    for who in ("bob", "dave"):
        feedback = (reports / f"{SLUG}-{who}" / "FEEDBACK.md").read_text()
        assert "no work committed before the deadline" in feedback and "not attempted yet" not in feedback
    assert "1 commit after the deadline" in (reports / f"{SLUG}-bob" / "FEEDBACK.md").read_text()
    page = (graded["out"] / "grades-report.md").read_text()
    assert "commits after the deadline" in page and "not attempted yet" not in page


def test_template_flags_hold_under_the_deadline(graded):
    assert f"{WORKFLOW} was changed from the template" in graded["rows"]["carol"]["flags"]
    assert graded["rows"]["alice"]["flags"] == ""


def test_the_grade_of_record_says_its_isolation_and_where_the_scores_went(graded, classroom):
    assert {row["isolation"] for who, row in graded["rows"].items() if who not in ("bob", "dave")} == {"namespaces"}
    assert str(classroom["course"] / "gradebook.db") in graded["log"] and "5 students" in graded["log"]
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{classroom['course'] / 'gradebook.db'}") as gradebook:
        assert str(gradebook.find_assignment(ASSIGNMENT).duedate) == "2026-03-01 22:59:00"  # UTC, as nbgrader keeps it
        # not graded: in the roster, with no submission (not a submission scored 0)
        assert sorted(s.student.id for s in gradebook.find_assignment(ASSIGNMENT).submissions) == ["alice", "carol", "erin"]
        assert sorted(s.id for s in gradebook.students) == ["alice", "bob", "carol", "dave", "erin"]


def test_the_same_class_under_another_root_is_the_same_students(graded, classroom):
    renamed = classroom["base"] / "spring-2026"
    shutil.copytree(classroom["root"], renamed, symlinks=True)
    out = classroom["base"] / "out-again"
    proc = batch(renamed, out, classroom["course"], classroom["template"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert {who: row["score"] for who, row in rows(out).items()} == {who: row["score"] for who, row in graded["rows"].items()}
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{classroom['course'] / 'gradebook.db'}") as gradebook:
        assert sorted(s.id for s in gradebook.students) == ["alice", "bob", "carol", "dave", "erin"]


def test_ids_that_would_change_are_refused_before_anything_is_written(graded, classroom):
    database = classroom["course"] / "gradebook.db"
    before = database.stat().st_mtime_ns
    out = classroom["base"] / "out-slug"
    proc = batch(classroom["root"], out, classroom["course"], classroom["template"], "--classroom-slug", "attention")
    assert proc.returncode == 2
    assert "would be in it twice" in proc.stderr and "--classroom-slug attention-ch03" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists() and database.stat().st_mtime_ns == before


def test_wrong_use_gets_a_word_not_a_grade(classroom):
    grade = subprocess.run([sys.executable, "-m", "grader", "grade", str(classroom["root"]), "--assignment", ASSIGNMENT],
                           cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert grade.returncode == 2 and "python -m grader batch" in grade.stderr and "5 submission folder(s)" in grade.stderr
    missing = classroom["base"] / "no-such-course"
    proc = batch(classroom["root"], classroom["base"] / "out-missing", missing, classroom["template"])
    assert proc.returncode == 2 and "is not a folder" in proc.stderr and not missing.exists()


def test_a_folder_name_no_terminal_should_print_is_graded_and_shown_inert(tmp_path):
    """A line break, an escape sequence and a bidi override in a repository's folder name: the
    repository is still read (git never sees the name), and no report carries the characters."""
    template = tmp_path / "template"
    write(template, template_files())
    root = tmp_path / f"{SLUG}-submissions"
    solved(accepted(root, "mal\nlory\x1b[31mRED\u202etxt"), BEFORE)
    solved(accepted(root, "alice"), BEFORE)
    course = tmp_path / "course"
    course.mkdir()
    proc = batch(root, tmp_path / "out", course, template)
    assert proc.returncode == 0, proc.stderr[-3000:]
    graded = rows(tmp_path / "out")
    assert sorted(float(row["score"]) for row in graded.values()) == [FULL, FULL]
    for path in (tmp_path / "out").rglob("*"):
        if path.suffix in (".md", ".html", ".csv", ".json"):
            text = path.read_text()
            assert "\x1b" not in text and "\u202e" not in text, path
