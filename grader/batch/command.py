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

import tempfile
import time
from pathlib import Path

from grader import manifest
from grader.assignment import Assignment, AssignmentNotFound
from grader.batch.class_folders import classroom_prefix, one_submission, skipped_entries, student_names, submission_folders
from grader.batch.resume import GRADED, earlier_report, fingerprint, grading_identity
from grader.batch.template_files import checkout_template, template_flags, template_stubs
from grader.model import Report
from grader.settings import Settings
from grader.submission import shown


def not_graded(rubric, why: str) -> Report:
    """The report of a submission that was not graded at all (score 0, every exercise saying why)."""
    from grader.model import ExerciseResult

    exercises = [ExerciseResult(e.name, 0.0, e.max_score, message=why) for e in rubric.exercises]
    return Report(rubric.assignment, 0.0, sum(e.max_score for e in exercises), exercises, flags=[f"not graded: {why}"])


# -- the batch command -------------------------------------------------------------------------


class WeakIsolation(RuntimeError):
    """Student code would run with less than full isolation, and ``batch`` was not told to accept it."""


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


def run(
    root: Path,
    assignment: str,
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
    """``batch``: grade every submission folder under ``root``; exit code as in ``grader.cli``."""
    import sys

    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from grader.batch import deadline as deadlines
    from grader.hygiene import clean
    from grader.batch.pool import grade_many
    from grader.batch import class_report
    from grader.batch import gradebook as books
    from grader.reports import replace_atomically, write_json

    console = console or Console(stderr=True, highlight=False)

    def refuse(message: str, code: int = 2) -> int:
        print(f"error: {message}", file=sys.stderr)
        return code

    if not root.is_dir():
        return refuse(f"{shown(root)} is not a folder")
    if refused := one_submission(root):
        return refuse(refused)
    try:
        due = deadlines.parse(deadline) if deadline else None
    except deadlines.DeadlineError as exc:
        return refuse(str(exc))
    try:
        resolved = Assignment.resolve(assignment, settings)
        rubric = resolved.rubric
    except AssignmentNotFound as exc:
        return refuse(str(exc))
    if gradebook is not None and not gradebook.is_dir():
        return refuse(f"--gradebook {shown(gradebook)} is not a folder: give an nbgrader course folder (the one "
                      "holding gradebook.db), or create it first (mkdir) to start a new gradebook there")
    due_text = duedate or deadline  # the CSV's duedate column and the gradebook's due date
    if gradebook is not None and due_text and (problem := books.due_date_problem(due_text)):
        return refuse(f"--duedate {problem}")
    hashes: dict[str, str] = {}
    if template is not None:
        if not template.is_dir():
            return refuse(f"template {template} is not a folder")
        hashes = manifest.of_template(template)
    known_files = hashes or checkout_template(settings, resolved)  # the template's own files are not flagged
    folders = submission_folders(root, assignment)
    for entry in skipped_entries(root, assignment):
        console.print(escape(f"skipped {entry}"), soft_wrap=True)
    if not folders:
        return refuse(f"no submission folder under {shown(root)} (a git repository, or a folder holding "
                      f"exercises/{assignment}/); nothing was graded")
    reports_dir = reports_dir or csv_path.parent / f"{assignment}-reports"
    exercises = [e.name for e in rubric.exercises]
    names, id_notes = student_names(folders, classroom_prefix(root, folders, slug))
    for note in id_notes:
        console.print(escape(note), soft_wrap=True)
    if gradebook is not None:
        changed = books.id_changes(books.graded_ids(gradebook, assignment), names)
        if changed:
            folder, now, before = changed[0]
            hint = folder[: -len(before)].rstrip("-") if folder.endswith(before) and folder != before else ""
            fix = (f"--classroom-slug {hint}" if hint else "--classroom-slug with the slug you graded with before")
            return refuse(
                f"the gradebook {shown(gradebook / books.GRADEBOOK_FILE)} already holds {assignment} for "
                f"{clean(before)}, whom this run would record as {clean(now)} (folder {shown(Path(folder))}); "
                f"{len(changed)} student(s) would be in it twice. Nothing was written. Give the ids the gradebook "
                f"uses: {fix}")
    students = books.read_students(gradebook) if gradebook else {}
    grading = grading_identity(resolved, settings, known_files)
    sources: dict[str, dict[str, str]] = {f.name: {"folder": f.name, "commit": "", "committed_at": ""} for f in folders}
    skipped: dict[str, Report] = {}  # graded on nothing: no work before the deadline, an unreadable repository
    staged_flags: dict[Path, list[str]] = {}
    staging = tempfile.TemporaryDirectory(prefix="grader-deadline-")
    to_grade: list[Path] = []
    commit_of: dict[str, str] = {}
    template = {**template_stubs(resolved), **known_files} if due else {}  # the stubs tell a commit with no work
    for folder in folders:
        if due is None:
            to_grade.append(folder)
            continue
        found = deadlines.at_deadline(folder, assignment, exercises, due, template, compare_with=hashes or None)
        source = sources[folder.name]
        if found.later:
            source.update(commits_after_deadline=str(found.later), last_commit_after_deadline=found.latest)
        if not found.repository:  # no .git: the work tree as it is, said beside the grade
            source["commit"] = "(not a git repository: graded as it is)"
            to_grade.append(folder)
        elif found.problem:
            skipped[folder.name] = not_graded(rubric, found.problem)
        elif found.template_commit:
            source.update(commit=found.commit, committed_at=found.committed)
            skipped[folder.name] = not_graded(rubric, f"no work committed before the deadline: the last commit by then "
                                              f"({found.commit[:12]}, {found.committed}) holds the template's exercise files unchanged")
        else:
            staged = deadlines.write_staged(Path(staging.name) / folder.name, assignment, found)
            staged_flags[staged] = found.flags
            source.update(commit=found.commit, committed_at=found.committed)
            commit_of[folder.name] = found.commit
            to_grade.append(staged)
    prints = {folder.name: fingerprint(folder, grading + "\0" + commit_of.get(folder.name, "")) for folder in to_grade}
    results = {folder.name: report for folder in to_grade if (report := earlier_report(reports_dir / folder.name, prints[folder.name]))}
    results |= skipped
    pending = [folder for folder in to_grade if folder.name not in results]

    def student_of(name: str, report: Report) -> class_report.Student:
        return class_report.Student(names[name], name, report, sources[name], name in skipped)

    def row_of(name: str, report: Report) -> dict[str, str]:  # made once per student: the file is rewritten from these
        return books.csv_row(assignment, exercises, names[name], report, duedate=due_text,
                             person=students.get(names[name]), source=sources[name])

    rows = {name: row_of(name, report) for name, report in results.items()}

    def write_rows() -> None:
        books.write_csv(csv_path, exercises, [rows[n] for n in sorted(rows, key=names.get)])

    feedback: dict[str, Path] = {}  # each student's FEEDBACK.md, by folder: written once the grade is known

    def record(name: str, report: Report) -> None:  # each student's grade on disk as soon as it is known
        write_json(report, reports_dir / name / "REPORT.json")
        results[name] = report
        rows[name] = row_of(name, report)
        write_rows()
        feedback[name] = class_report.write_feedback(student_of(name, report), reports_dir)
        # Last: a report marked reusable is in the CSV already, whenever the run is killed.
        if not report.grader_errors and name in prints:  # a failed grading is tried again next time
            replace_atomically(reports_dir / name / GRADED, prints[name] + "\n")

    def begin(isolation: set[str]) -> None:
        """Once the sandbox works, before any student's code runs: refuse weak isolation, then write."""
        from grader.sandbox.confine import NAMESPACES

        weaker = sorted(mode for mode in isolation if mode != NAMESPACES)
        if weaker and not accept_weak_isolation:
            raise WeakIsolation(weak_isolation(weaker))
        reports_dir.mkdir(parents=True, exist_ok=True)
        for name, report in skipped.items():
            record(name, report)
        for name in results.keys() - skipped.keys():  # reused from an earlier run: their feedback
            feedback[name] = class_report.write_feedback(student_of(name, results[name]), reports_dir)  # as named now
        write_rows()

    def known(folder: Path) -> frozenset[str]:
        return manifest.unchanged(folder, known_files)

    def extra_flags(folder: Path) -> list[str]:
        if folder in staged_flags:  # graded at a commit: what the commit's files raise
            return staged_flags[folder]
        return template_flags(folder, hashes) if hashes else []

    started = time.monotonic()
    if not pending:
        begin(set())
    try:
        # No refresh thread: grading processes are forked from this one.
        with staging, Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("{task.fields[last]}"), console=console, auto_refresh=False, transient=False,
        ) as progress:
            task = progress.add_task(f"grading {assignment}", total=len(folders), completed=len(results), last="")
            progress.refresh()
            graded = grade_many(pending, resolved, settings, jobs=jobs, known=known, extra_flags=extra_flags,
                                ready=begin) if pending else []
            for folder, report in graded:
                record(folder.name, report)
                last = escape(clean(f"{names[folder.name]}: {report.score:g}/{report.max_score:g}", 80))
                progress.update(task, advance=1, last=last)
                progress.refresh()
    except WeakIsolation as exc:
        return refuse(str(exc), 3)
    except KeyboardInterrupt:
        done = sum(name in results for name in sources)
        print(f"\ninterrupted: {done} of {len(folders)} students' grades are on disk ({shown(csv_path)}); run the same "
              "command again to grade the rest (what was graded is reused)", file=sys.stderr)
        return 130
    elapsed = time.monotonic() - started
    ordered = sorted(results.items(), key=lambda item: names[item[0]])
    where = [f"grades in {csv_path}"]
    if gradebook:
        books.write_gradebook(gradebook, assignment, [(names[n], r) for n, r in ordered], duedate=due_text or None,
                              not_graded={names[n] for n in skipped})
        where.append(f"the gradebook {gradebook / books.GRADEBOOK_FILE} ({len(ordered)} students"
                     + (f", due {due_text}" if due_text else "") + ")")
    pages = class_report.write(csv_path, assignment, rubric, [student_of(n, r) for n, r in ordered], feedback)
    flagged = sum(bool(r.flags) for n, r in ordered if n not in skipped)
    failed = sum(bool(r.grader_errors) for _, r in ordered)
    per = elapsed / len(pending) if pending else 0.0
    reused = len(to_grade) - len(pending)
    late = f"{len(skipped)} not graded (see the class report), " if skipped else ""
    after = sum(bool(source.get("commits_after_deadline")) for source in sources.values())
    after_text = f"{after} with commits after the deadline, " if after else ""
    console.print(escape(clean(
        f"{len(pending)} submission{'s' if len(pending) != 1 else ''} graded in {elapsed:.1f} s ({per:.2f} s each, {jobs} at a time), {reused} unchanged "
        f"since an earlier run; {late}{after_text}{flagged} flagged, {failed} with grader errors; {', '.join(where)}; "
        f"reports in {reports_dir}; the class report: {pages.html} (and {pages.markdown.name})", 1000
    )), soft_wrap=True)
    return 0
