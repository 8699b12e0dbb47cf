"""Grade a whole class: ``python -m grader batch ROOT --assignment ch03 --csv grades.csv``.

:func:`run` grades every folder directly under ROOT (cloned student repositories; the student
is named by the folder, or by the login when folders follow GitHub Classroom's
``<assignment>-<login>`` naming, :mod:`grader.batch.class_folders`) in a pool of grading processes (:mod:`grader.batch.pool`), and writes each
student's REPORT.json as soon as it is known, a CSV with ``nbgrader export``'s columns plus
one column per exercise and the flags (rewritten after every student), and optionally the
scores into an nbgrader gradebook. Every file is replaced atomically, so a batch that is
interrupted loses nothing already graded; run again, it reuses every report whose submission,
grading suite, grader and limits are unchanged (:mod:`grader.batch.resume`) and grades the rest.
With ``--template`` (a released template folder) it also flags workflow and test files a
student changed or removed: see :func:`grader.manifest.of_template` and :mod:`grader.batch.template_files`;
without it, the template this checkout releases is still known, so
its own files (``pytest.ini``, the grader's package) are not flagged. With ``--deadline`` each
git repository is graded at its last commit at or before the deadline (:mod:`grader.batch.deadline`).
Beside the CSV it writes the class report and a feedback file per student
(:mod:`grader.batch.class_report`).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from grader import manifest
from grader.assignment import Assignment
from grader.batch import class_report
from grader.batch import deadline as deadlines
from grader.batch import gradebook as books
from grader.batch.class_folders import classroom_prefix, one_submission, skipped_entries, student_names, submission_folders
from grader.batch.recording import ClassRecord
from grader.batch.resume import grading_identity
from grader.batch.student import Deadline, Student, plan, reuse_earlier
from grader.batch.template_files import checkout_template, template_flags, template_stubs
from grader.errors import CommandError
from grader.hygiene import clean
from grader.settings import Settings
from grader.submission import shown


class WeakIsolation(CommandError):
    """Student code would run with less than full isolation, and ``batch`` was not told to accept it."""

    exit_code = 3


WEAK_ISOLATION = (
    "batch grades only where student code runs fully isolated, and here it would not ({mode}). {risk} Run it as "
    "root (sudo .venv/bin/python -m grader batch ...): student code then runs in namespaces as an unprivileged user, "
    "and what one student leaves in the page cache reaches no classmate. Or pass --accept-weak-isolation to grade "
    "anyway (the CSV and the reports then say so). Nothing was graded"
)


def weak_isolation(weaker: list[str]) -> str:
    """Why ``batch`` refuses the isolation ``weaker`` (each a module's mode, less than full)."""
    from grader.sandbox.confine import NAMESPACES
    from grader.sandbox.pagecache import UNGUARDED

    if any(mode.split("; ")[0] != NAMESPACES for mode in weaker):
        risk = ("Student code could read what this user can read (your files and tokens, the tests, the solutions, "
                "classmates' work).")
    elif any(UNGUARDED in mode for mode in weaker):
        risk = ("A student's code could pass signals to classmates graded after it through the kernel's page cache "
                "(which pages of shared files are in memory): only root can guard it.")
    else:
        risk = "Without the system-call filter, workers could reach calls that signal between processes."
    return WEAK_ISOLATION.format(mode="; ".join(weaker), risk=risk)


def refuse_weak_isolation(isolation: set[str]) -> None:
    """Raise WeakIsolation unless every module's student code runs fully isolated."""
    from grader.sandbox.confine import NAMESPACES

    if weaker := sorted(mode for mode in isolation if mode != NAMESPACES):
        raise WeakIsolation(weak_isolation(weaker))


def run(
    root: Path,
    assignment: Assignment,
    settings: Settings,
    *,
    csv_path: Path,
    reports_dir: Path | None = None,
    jobs: int = 2,
    template: Path | None = None,
    gradebook: Path | None = None,
    duedate: str = "",
    deadline: str = "",
    slug: str = "",
    accept_weak_isolation: bool = False,
    console=None,
) -> int:
    """``batch``: grade every submission folder under ``root``; CommandError for what it will not do."""
    from rich.console import Console

    console = console or Console(stderr=True, highlight=False)
    due = checked_options(root, deadline, gradebook, duedate or deadline)
    hashes = template_hashes(template)
    known_files = hashes or checkout_template(settings, assignment)  # the template's own files are not flagged
    folders = class_folders(root, assignment.name, console)
    reports_dir = reports_dir or csv_path.parent / f"{assignment.name}-reports"
    names, id_notes = student_names(folders, classroom_prefix(root, folders, slug))
    for note in id_notes:
        say(console, note)
    if gradebook is not None:
        same_ids_as_before(gradebook, assignment.name, names)
    with tempfile.TemporaryDirectory(prefix="grader-deadline-") as staging:
        at = Deadline(due, {**template_stubs(assignment), **known_files}, hashes or None,
                      Path(staging)) if due else None  # the stubs tell a commit with no work
        students = plan(folders, names, assignment, at)
        reuse_earlier(students, reports_dir, grading_identity(assignment, settings, known_files))
        record = ClassRecord(assignment.name, [e.name for e in assignment.rubric.exercises], students,
                             csv_path=csv_path, reports_dir=reports_dir, duedate=duedate or deadline,
                             people=books.read_students(gradebook) if gradebook else {})
        try:
            elapsed = grade_pending(students, record, assignment, settings, jobs=jobs, console=console,
                                    known_files=known_files, hashes=hashes, accept_weak_isolation=accept_weak_isolation)
        except KeyboardInterrupt:
            done = sum(s.report is not None for s in students)
            print(f"\ninterrupted: {done} of {len(folders)} students' grades are on disk ({shown(csv_path)}); run the same "
                  "command again to grade the rest (what was graded is reused)", file=sys.stderr)
            return 130
    finish(students, record, assignment, jobs=jobs, elapsed=elapsed, gradebook=gradebook, console=console)
    return 0


def say(console, text: str) -> None:
    """One line of the batch's progress, as plain text (student names are no markup)."""
    from rich.markup import escape

    console.print(escape(text), soft_wrap=True)


def checked_options(root: Path, deadline: str, gradebook: Path | None, due_text: str):
    """The deadline ``--deadline`` gives (None without one); CommandError for what cannot be graded as asked."""
    if not root.is_dir():
        raise CommandError(f"{shown(root)} is not a folder")
    if refused := one_submission(root):
        raise CommandError(refused)
    try:
        due = deadlines.parse(deadline) if deadline else None
    except deadlines.DeadlineError as exc:
        raise CommandError(str(exc)) from None
    if gradebook is not None and not gradebook.is_dir():
        raise CommandError(f"--gradebook {shown(gradebook)} is not a folder: give an nbgrader course folder (the one "
                           "holding gradebook.db), or create it first (mkdir) to start a new gradebook there")
    if gradebook is not None and due_text and (problem := books.due_date_problem(due_text)):
        raise CommandError(f"--duedate {problem}")
    return due


def template_hashes(template: Path | None) -> dict[str, str]:
    """The released template's files and their hashes (none without ``--template``)."""
    if template is None:
        return {}
    if not template.is_dir():
        raise CommandError(f"template {template} is not a folder")
    return manifest.of_template(template)


def class_folders(root: Path, assignment: str, console) -> list[Path]:
    """The submission folders under ``root`` (what is skipped, said); CommandError when there is none."""
    folders = submission_folders(root, assignment)
    for entry in skipped_entries(root, assignment):
        say(console, f"skipped {entry}")
    if not folders:
        raise CommandError(f"no submission folder under {shown(root)} (a git repository, or a folder holding "
                           f"exercises/{assignment}/); nothing was graded")
    return folders


def same_ids_as_before(gradebook: Path, assignment: str, names: dict[str, str]) -> None:
    """CommandError when the gradebook holds a student of this class under another id (another slug)."""
    changed = books.id_changes(books.graded_ids(gradebook, assignment), names)
    if not changed:
        return
    folder, now, before = changed[0]
    hint = folder[: -len(before)].rstrip("-") if folder.endswith(before) and folder != before else ""
    fix = (f"--classroom-slug {hint}" if hint else "--classroom-slug with the slug you graded with before")
    raise CommandError(
        f"the gradebook {shown(gradebook / books.GRADEBOOK_FILE)} already holds {assignment} for "
        f"{clean(before)}, whom this run would record as {clean(now)} (folder {shown(Path(folder))}); "
        f"{len(changed)} student(s) would be in it twice. Nothing was written. Give the ids the gradebook "
        f"uses: {fix}")


def grade_pending(students: list[Student], record: ClassRecord, assignment: Assignment, settings: Settings, *, jobs: int, console,
                  known_files: dict[str, str], hashes: dict[str, str], accept_weak_isolation: bool) -> float:
    """Grade every student whose report is not known yet, recording each as it ends; the seconds it took."""
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from grader.batch.pool import grade_many

    pending = [s for s in students if s.graded is not None and s.report is None]
    by_graded = {s.graded: s for s in pending}

    def begin(isolation: set[str]) -> None:  # once the sandbox works, before any student's code runs
        if not accept_weak_isolation:
            refuse_weak_isolation(isolation)
        record.begin()

    def extra_flags(graded: Path) -> list[str]:  # in the student's grading process
        student = by_graded[graded]
        if student.graded != student.folder:  # graded at a commit: what the commit's files raise
            return student.flags
        return template_flags(graded, hashes) if hashes else []

    started = time.monotonic()
    if not pending:
        begin(set())
    # No refresh thread: grading processes are forked from this one.
    with Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"), console=console, auto_refresh=False, transient=False,
    ) as progress:
        task = progress.add_task(f"grading {assignment.name}", total=len(students),
                                 completed=sum(s.report is not None for s in students), last="")
        progress.refresh()
        graded = grade_many([s.graded for s in pending], assignment, settings, jobs=jobs,
                            known=lambda folder: manifest.unchanged(folder, known_files), extra_flags=extra_flags,
                            ready=begin) if pending else []
        for folder, report in graded:
            student = by_graded[folder]
            record.record(student, report)
            progress.update(task, advance=1, last=escape(clean(f"{student.name}: {report.score:g}/{report.max_score:g}", 80)))
            progress.refresh()
    return time.monotonic() - started


def finish(students: list[Student], record: ClassRecord, assignment: Assignment, *, jobs: int, elapsed: float,
           gradebook: Path | None, console) -> None:
    """The gradebook, the class report, and one line saying what was done and where it is."""
    ordered = sorted((s for s in students if s.report is not None), key=lambda s: s.name)
    where = [f"grades in {record.csv_path}"]
    if gradebook:
        books.write_gradebook(gradebook, assignment.name, [(s.name, s.report) for s in ordered],
                              duedate=record.duedate or None, not_graded={s.name for s in students if s.skipped})
        where.append(f"the gradebook {gradebook / books.GRADEBOOK_FILE} ({len(ordered)} students"
                     + (f", due {record.duedate}" if record.duedate else "") + ")")
    pages = class_report.write(record.csv_path, assignment.name, assignment.rubric, ordered)
    graded_now = sum(s.graded is not None and not s.reused for s in students)
    skipped = sum(s.skipped for s in students)
    flagged = sum(bool(s.report.flags) for s in ordered if not s.skipped)
    failed = sum(bool(s.report.grader_errors) for s in ordered)
    per = elapsed / graded_now if graded_now else 0.0
    reused = sum(s.reused for s in students)
    late = f"{skipped} not graded (see the class report), " if skipped else ""
    after = sum(bool(s.source.get("commits_after_deadline")) for s in students)
    after_text = f"{after} with commits after the deadline, " if after else ""
    say(console, clean(
        f"{graded_now} submission{'s' if graded_now != 1 else ''} graded in {elapsed:.1f} s ({per:.2f} s each, {jobs} at a time), {reused} unchanged "
        f"since an earlier run; {late}{after_text}{flagged} flagged, {failed} with grader errors; {', '.join(where)}; "
        f"reports in {record.reports_dir}; the class report: {pages.html} (and {pages.markdown.name})", 1000
    ))
