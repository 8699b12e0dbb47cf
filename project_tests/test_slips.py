"""The common slips of a new instructor, each answered with a message: ``batch`` pointed at one
submission, a deadline without its time zone, the template's own files, a command run without
its packages, ``release``'s next steps, and a demo a newcomer reads to the end."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from grader import manifest
from grader.assignment import Assignment
from grader.batch import class_folders, template_files
from grader.model import Report
from grader.settings import Settings
from project_tests.helpers import ROOT, make_submission


def run_grader(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("top", ["exercises", ".git"])
def test_batch_refuses_a_folder_that_is_one_submission(tmp_path, top):
    one = make_submission(tmp_path / "alice", "ch03")
    (one / top).mkdir(exist_ok=True)
    (one / "exercises" / "ch03").mkdir(parents=True, exist_ok=True)  # its sub-folders would look like students
    proc = run_grader("batch", str(one), "--assignment", "ch03", "--csv", str(tmp_path / "grades.csv"))
    assert proc.returncode == 2
    assert "looks like one submission, not a class" in proc.stderr and "one folder per student" in proc.stderr
    assert "python -m grader grade" in proc.stderr
    assert not (tmp_path / "grades.csv").exists()


def test_batch_says_how_to_write_a_deadline(tmp_path):
    make_submission(tmp_path / "class" / "alice", "ch03")
    proc = run_grader("batch", str(tmp_path / "class"), "--assignment", "ch03", "--csv", str(tmp_path / "g.csv"),
                      "--deadline", "2026-03-01T23:59")
    assert proc.returncode == 2 and "has no time zone" in proc.stderr and "+00:00" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_classroom_folder_names_give_logins():
    folders = [Path("hw-submissions/hw-alice"), Path("hw-submissions/hw-bob-smith"), Path("hw-submissions/notes")]
    prefix = class_folders.classroom_prefix(Path("hw-submissions"), folders)
    assert prefix == "hw-"
    assert class_folders.student_names(folders, prefix) == ({"hw-alice": "alice", "hw-bob-smith": "bob-smith", "notes": "notes"}, [])
    assert class_folders.classroom_prefix(Path("class"), [Path("ch03-ann"), Path("ch03-bo")]) == "ch03-"
    assert class_folders.classroom_prefix(Path("class"), [Path("ann"), Path("ch03-bo")]) == ""
    # two folders that would share a login keep their full names
    assert class_folders.student_names([Path("hw-ann"), Path("ann")], "hw-") == ({"hw-ann": "hw-ann", "ann": "ann"}, [])


def test_an_id_does_not_depend_on_the_class_folder():
    folders = [Path("attention-ch03-alice"), Path("attention-ch03-bob")]
    for root in ("attention-ch03-submissions", "spring", "attention-ch03-submissions-copy", "ch03-submissions"):
        assert class_folders.classroom_prefix(Path(root), folders) == "attention-ch03-", root
    # logins that begin alike: the root gh classroom made says where the slug ends; --classroom-slug says it anywhere
    alike = [Path("attention-ch03-ab-x"), Path("attention-ch03-ab-y")]
    assert class_folders.classroom_prefix(Path("attention-ch03-submissions"), alike) == "attention-ch03-"
    assert class_folders.classroom_prefix(Path("spring"), alike, slug="attention-ch03") == "attention-ch03-"
    # a class of one: only the root can tell
    assert class_folders.classroom_prefix(Path("attention-ch03-submissions"), folders[:1]) == "attention-ch03-"
    assert class_folders.classroom_prefix(Path("spring"), folders[:1]) == ""


def test_two_folders_never_become_one_id():
    folders = [Path("hw-alice"), Path("hw-al\u202eice"), Path("hw-al\x1bice"), Path("hw-" + "x" * 300), Path("hw-" + "x" * 301)]
    ids, notes = class_folders.student_names(folders, "hw-")
    assert len(set(ids.values())) == len(folders)
    assert ids["hw-alice"] == "alice"  # an id that cleaning left alone stays
    assert ids["hw-al\u202eice"].startswith("alice~") and ids["hw-al\x1bice"].startswith("alice~")
    assert len(notes) == 4 and all("would be another folder's too" in note for note in notes)
    assert class_folders.student_names(folders, "hw-") == (ids, notes)  # the same in every run


def test_the_checkout_knows_its_template_files(tmp_path):
    known = template_files.checkout_template(Settings(), Assignment.resolve("ch03", Settings()))
    assert {"pytest.ini", "public_tests/ch03/rubric.toml", "grader/submission.py"} <= set(known)
    assert "README.md" not in known  # filled in by release: not the same bytes
    student = make_submission(tmp_path / "s", "ch03")
    (student / "pytest.ini").write_bytes((ROOT / "template" / "pytest.ini").read_bytes())
    assert "pytest.ini" in manifest.unchanged(student, known)
    (student / "pytest.ini").write_text("[pytest]\naddopts = -p evil\n")
    assert "pytest.ini" not in manifest.unchanged(student, known)  # changed: flagged as before


def test_a_command_without_its_packages_says_what_to_install(tmp_path):
    fake = tmp_path / "site" / "rich"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'rich'\", name='rich')\n")
    make_submission(tmp_path / "s", "ch03")
    proc = run_grader("grade", str(tmp_path / "s"), "--assignment", "ch03", env={"PYTHONPATH": str(tmp_path / "site")})
    assert proc.returncode == 3
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "'grade' needs the package rich" in lines[0] and "pip install -r" in lines[0]


def test_release_ends_with_the_next_steps(tmp_path, monkeypatch, capsys):
    from argparse import Namespace

    from grader import verbs
    from grader.settings import Settings
    from grader.release import command as release

    monkeypatch.setattr(release, "build", lambda assignment, out, force: release.Released(out, assignment, ["mha"], []))
    assert verbs.release(Namespace(assignment="ch03", out=tmp_path / "t", force=False), Settings()) == 0
    text = capsys.readouterr().out
    steps = text[text.index("Next steps"):]
    for needed in ("create a repository", "template repository", "GRADER_TOKEN", "GRADER_REPO",
                   "gh classroom clone student-repos", "--assignment ch03"):
        assert needed in steps


def test_the_demo_reads_to_the_end_at_80_columns():
    from rich.console import Console

    from grader import demo
    from grader.reports import terminal

    report = Report.from_dict(json.loads((ROOT / "docs" / "sample-report.json").read_text()))
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=False, color_system=None)
    terminal.show(report, console=console, compact=True)
    text = out.getvalue()
    lines = text.splitlines()
    assert "✓ simple_attention  14/14: all 14 checks passed" in lines  # a passed module: one line
    assert sum("not attempted yet" in line or "not started yet" in line for line in lines) == 1  # mha: one line
    assert [line for line in lines if line.startswith("· mha")] == ["· mha  0/15: not started yet (14 checks)"]
    for exercise in report.exercises:
        for test in exercise.tests:
            if test.status != "passed" and exercise.message != "not attempted yet":
                assert f"• {test.name}  " in text  # every failing check, its name whole
    assert "what to fix first" in text and len(lines) < 150
    closing = demo.next_steps("ch03", Settings())
    assert closing.startswith("Try next:") and "--assignment d2l_attention" in closing


def shown(report, **options) -> list[str]:
    from rich.console import Console

    from grader.reports import terminal

    out = io.StringIO()
    terminal.show(report, console=Console(file=out, width=80, force_terminal=False, color_system=None), **options)
    return out.getvalue().splitlines()


def test_check_and_grade_give_a_passed_or_unstarted_module_one_line_and_detail_only_where_a_check_failed():
    report = Report.from_dict(json.loads((ROOT / "docs" / "sample-report.json").read_text()))
    lines = shown(report, public=True)
    assert "✓ simple_attention  14/14: all 14 checks passed" in lines
    assert [line for line in lines if line.startswith("· mha")] == ["· mha  0/15: not started yet (14 checks)"]
    passed = next(e for e in report.exercises if e.name == "simple_attention")
    assert not any(t.name in line for t in passed.tests for line in lines)  # no table for a passed module
    failing = [e for e in report.exercises if e.message != "not attempted yet" and any(t.status != "passed" for t in e.tests)]
    assert failing and all(f"{e.name}.py: what to fix first" in "\n".join(lines) or e.diagnosis is None for e in failing)
    for exercise in failing:  # the table of a failing module names its failing checks
        assert any(t.name[:20] in "\n".join(lines) for t in exercise.tests if t.status != "passed")
    assert shown(report)[:-1] == lines[:-1]  # grade: the same screen, with points in the total


def test_check_of_one_module_shows_it_alone_and_counts_only_its_checks():
    report = Report.from_dict(json.loads((ROOT / "docs" / "sample-report.json").read_text()))
    lines = shown(report, public=True, only=["simple_attention"])
    assert lines == ["✓ simple_attention  14/14: all 14 checks passed", "ch03 (simple_attention.py only): public checks: 14/14 passed"]
    lines = shown(report, only=["mha"])
    assert lines[-1] == "ch03 (mha.py only): 0 / 15 points"


def test_grade_refuses_what_is_not_a_submission_and_points_at_batch(tmp_path):
    from grader.verbs import not_a_submission

    (tmp_path / "class" / "alice" / "exercises" / "ch03").mkdir(parents=True)
    (tmp_path / "class" / "notes").mkdir()
    said = not_a_submission(tmp_path / "class", "ch03")
    assert "has no exercises/ch03/ folder" in said and "1 submission folder(s)" in said and "python -m grader batch" in said
    assert "batch" not in not_a_submission(tmp_path / "class" / "notes", "ch03")
    assert not_a_submission(tmp_path / "class" / "alice", "ch03") == ""
    (tmp_path / "repo" / ".git").mkdir(parents=True)  # a student's own repository, modules deleted: graded 0, as missing
    assert not_a_submission(tmp_path / "repo", "ch03") == ""
