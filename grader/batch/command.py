"""Grade a whole class: ``python -m grader batch ROOT --assignment ch03 --csv grades.csv``.

:func:`run` grades every folder directly under ROOT (cloned student repositories; the student
is named by the folder, or by the login when folders follow GitHub Classroom's
``<assignment>-<login>`` naming, :func:`student_names`) in a pool of grading processes (:mod:`grader.batch.pool`), and writes each
student's REPORT.json as soon as it is known, a CSV with ``nbgrader export``'s columns plus
one column per exercise and the flags (rewritten after every student), and optionally the
scores into an nbgrader gradebook. Every file is replaced atomically, so a batch that is
interrupted loses nothing already graded; run again, it reuses every report whose submission,
grading suite, grader and limits are unchanged (:func:`fingerprint`) and grades the rest.
With ``--template`` (a released template folder) it also flags workflow and test files a
student changed or removed: see :func:`grader.manifest.of_template` and :func:`template_flags`;
without it, the template this checkout releases (:func:`checkout_template`) is still known, so
its own files (``pytest.ini``, the grader's package) are not flagged. With ``--deadline`` each
git repository is graded at its last commit at or before the deadline (:mod:`grader.batch.deadline`).
Beside the CSV it writes the class report and a feedback file per student
(:mod:`grader.batch.class_report`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path

from grader import manifest
from grader.assignment import Assignment, AssignmentNotFound
from grader.model import Report
from grader.settings import Settings
from grader.submission import folders_under, shown


# -- the template: which files of a submission are the instructor's, unchanged ---------------

def guarded(path: str) -> bool:
    """Whether a template file is one a student must not change: a workflow, a file of the
    grader's (``.grader/``) or a public test (in a ``*test*`` folder, or ``test_*.py``)."""
    parts = Path(path).parts
    name = parts[-1]
    return (
        parts[:2] == (".github", "workflows")
        or parts[0] == ".grader"
        or any("test" in part.lower() for part in parts[:-1])
        or (name.startswith("test_") and name.endswith(".py"))
        or name.endswith("_test.py")
    )


def template_flags(root: Path, hashes: dict[str, str]) -> list[str]:
    """Workflow and test files of the template changed or removed in ``root``, and
    workflows added."""
    flags = []
    for path, digest in sorted(hashes.items()):
        if not guarded(path):
            continue
        actual = manifest.file_sha256(root / path)
        if actual is None:
            there = os.path.lexists(root / path)
            flags.append(f"{shown(Path(path))} was {'replaced by something that is not a regular file' if there else 'removed'} "
                         "(template file)")
        elif actual != digest:
            flags.append(f"{shown(Path(path))} was changed from the template")
    workflows = root / ".github" / "workflows"
    if workflows.is_dir() and not workflows.is_symlink():
        for entry in sorted(os.listdir(workflows))[:100]:
            relative = str(Path(".github") / "workflows" / entry)
            if relative not in hashes:
                flags.append(f"{shown(Path(relative))} is a workflow that is not in the template")
    return flags


# -- resuming: which reports of an earlier run still stand -----------------------------------

GRADED = ".graded"  # beside a student's REPORT.json: the fingerprint of what was graded
MAX_TREE_ENTRIES = 5000


def tree_digest(folder: Path) -> str:
    """sha256 over every entry under ``folder`` (``.git`` skipped, links not followed): names,
    kinds, contents of regular files, targets of links; ``__pycache__`` left out. Iterative:
    a submission may nest folders deeper than Python recurses."""
    digest = hashlib.sha256()
    count = 0
    for _, entries in folders_under(folder, skip=(".git", "__pycache__")):
        for entry in entries:
            count += 1
            if count > MAX_TREE_ENTRIES:
                return digest.hexdigest() + "+"
            if entry.is_symlink():
                kind = "link:" + os.readlink(entry.path)
            elif entry.is_dir(follow_symlinks=False):
                kind = "dir"
            else:
                kind = manifest.file_sha256(Path(entry.path)) or "other"
            digest.update(os.fsencode(os.path.relpath(entry.path, folder)) + b"\0" + kind.encode() + b"\0")
    return digest.hexdigest()


def grading_identity(assignment: Assignment, settings: Settings, template: dict[str, str]) -> str:
    """What decides a grade besides the submission: the suite, the solutions, the grader's
    code, the limits, the template."""
    parts = [assignment.name, json.dumps(dataclasses.asdict(settings), default=str, sort_keys=True),
             json.dumps(template, sort_keys=True)]
    parts += [tree_digest(folder) for folder in (assignment.suite, assignment.solutions, settings.project_root / "grader")]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def fingerprint(folder: Path, grading: str) -> str:
    """The fingerprint of grading ``folder`` now: its tree and the grading identity."""
    return hashlib.sha256(f"{tree_digest(folder)}\0{grading}".encode()).hexdigest()


def earlier_report(folder: Path, expected: str) -> Report | None:
    """The report an earlier run wrote into ``folder`` for the same fingerprint, if any."""
    try:
        if (folder / GRADED).read_text().strip() != expected:
            return None
        return Report.from_dict(json.loads((folder / "REPORT.json").read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return None


# -- the class folder ------------------------------------------------------------------------


SUBMISSIONS_SUFFIX = "-submissions"  # gh classroom clone student-repos: <assignment-slug>-submissions/


def submission_folders(root: Path) -> list[Path]:
    """Every folder directly under ``root`` (not hidden, not a symbolic link), by name."""
    return sorted(
        p for p in root.iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith(".")
    )


def skipped_entries(root: Path) -> list[str]:
    """What directly under ``root`` is not graded (hidden entries aside), each with the reason."""
    skipped = []
    for path in sorted(root.iterdir()):
        if path.name.startswith("."):
            continue
        if path.is_symlink():
            skipped.append(f"{shown(Path(path.name))}: a symbolic link (batch follows none; give it the real folders)")
        elif not path.is_dir():
            skipped.append(f"{shown(Path(path.name))}: not a folder")
    return skipped


def one_submission(root: Path) -> str:
    """Why ``root`` looks like one student's submission rather than a class ("" when it does not)."""
    for name, what in (("exercises", "an exercises/ folder"), (".git", "a .git folder")):
        if os.path.lexists(root / name):
            return (f"{shown(root)} has {what} at its top: it looks like one submission, not a class. batch expects "
                    "a folder holding one folder per student (such as the one 'gh classroom clone student-repos' "
                    "makes); to grade one submission use: python -m grader grade " + shown(root))
    return ""


def classroom_prefix(root: Path, folders: list[Path], assignment: str) -> str:
    """The ``<assignment>-`` part of GitHub Classroom's folder names, or "" when they do not follow it.

    ``gh classroom clone student-repos`` clones every ``<slug>-<login>`` repository into
    ``<slug>-submissions/``; otherwise folders all named ``<assignment>-...`` are taken as Classroom's."""
    names = [f.name for f in folders]
    if root.name.endswith(SUBMISSIONS_SUFFIX) and len(root.name) > len(SUBMISSIONS_SUFFIX):
        prefix = root.name[: -len(SUBMISSIONS_SUFFIX)] + "-"
        if any(n.startswith(prefix) for n in names):
            return prefix
    prefix = f"{assignment}-"
    return prefix if names and all(n.startswith(prefix) and len(n) > len(prefix) for n in names) else ""


def student_names(folders: list[Path], prefix: str) -> dict[str, str]:
    """Each folder's student: the login after ``prefix``, else the folder's name (also when two
    folders would share a login)."""
    logins = {f.name: f.name[len(prefix):] if prefix and f.name.startswith(prefix) and len(f.name) > len(prefix) else f.name
              for f in folders}
    taken = [v for v in logins.values()]
    return {name: login if taken.count(login) == 1 else name for name, login in logins.items()}


def checkout_template(settings: Settings, assignment: Assignment) -> dict[str, str]:
    """``{relative path: sha256}`` of the files this checkout's ``release`` ships unchanged: the
    template's own files without placeholders (``pytest.ini``, ...), the public tests and the
    grader package. Students' copies of them are not flagged."""
    root = settings.project_root
    hashes: dict[str, str] = {}
    template = assignment.template
    if template.is_dir():
        for relative, digest in manifest.hash_folder(template).items():
            if "__" not in (template / relative).read_text(errors="replace"):  # a placeholder: rendered by release
                hashes[relative] = digest
    for folder in (assignment.public_suite, root / "grader"):
        if folder.is_dir():
            shipped_as = folder.relative_to(root).as_posix()  # where release puts it in the template
            hashes |= {f"{shipped_as}/{relative}": digest for relative, digest in manifest.hash_folder(folder).items()
                       if "__pycache__" not in relative}
    return hashes


def not_graded(rubric, why: str) -> Report:
    """The report of a submission that was not graded at all (score 0, every exercise saying why)."""
    from grader.model import ExerciseResult

    exercises = [ExerciseResult(e.name, 0.0, e.max_score, message=why) for e in rubric.exercises]
    return Report(rubric.assignment, 0.0, sum(e.max_score for e in exercises), exercises, flags=[f"not graded: {why}"])


# -- the batch command -------------------------------------------------------------------------


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
    if not root.is_dir():
        print(f"error: {shown(root)} is not a folder", file=sys.stderr)
        return 2
    if refused := one_submission(root):
        print(f"error: {refused}", file=sys.stderr)
        return 2
    try:
        due = deadlines.parse(deadline) if deadline else None
    except deadlines.DeadlineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        resolved = Assignment.resolve(assignment, settings)
        rubric = resolved.rubric
    except AssignmentNotFound as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    hashes: dict[str, str] = {}
    if template is not None:
        if not template.is_dir():
            print(f"error: template {template} is not a folder", file=sys.stderr)
            return 2
        hashes = manifest.of_template(template)
    known_files = hashes or checkout_template(settings, resolved)  # the template's own files are not flagged
    folders = submission_folders(root)
    for entry in skipped_entries(root):
        console.print(f"skipped {entry}")
    if not folders:
        print(f"error: no submission folder under {shown(root)}; nothing was graded", file=sys.stderr)
        return 2
    reports_dir = reports_dir or csv_path.parent / f"{assignment}-reports"
    reports_dir.mkdir(parents=True, exist_ok=True)
    exercises = [e.name for e in rubric.exercises]
    students = books.read_students(gradebook) if gradebook else {}
    names = student_names(folders, classroom_prefix(root, folders, assignment))
    grading = grading_identity(resolved, settings, known_files)
    sources: dict[str, dict[str, str]] = {f.name: {"folder": f.name, "commit": "", "committed_at": ""} for f in folders}
    skipped: dict[str, Report] = {}  # graded on nothing: no commit before the deadline, an unreadable repository
    staged_flags: dict[Path, list[str]] = {}
    staging = tempfile.TemporaryDirectory(prefix="grader-deadline-")
    to_grade: list[Path] = []
    commit_of: dict[str, str] = {}
    for folder in folders:
        if due is None:
            to_grade.append(folder)
            continue
        found = deadlines.at_deadline(folder, assignment, exercises, due, known_files)
        if not found.repository:  # no .git: the work tree as it is, said beside the grade
            sources[folder.name]["commit"] = "(not a git repository: graded as it is)"
            to_grade.append(folder)
        elif found.problem:
            skipped[folder.name] = not_graded(rubric, found.problem)
        else:
            staged = deadlines.write_staged(Path(staging.name) / folder.name, assignment, found)
            staged_flags[staged] = found.flags
            sources[folder.name].update(commit=found.commit, committed_at=found.committed)
            commit_of[folder.name] = found.commit
            to_grade.append(staged)
    prints = {folder.name: fingerprint(folder, grading + "\0" + commit_of.get(folder.name, "")) for folder in to_grade}
    results = {folder.name: report for folder in to_grade if (report := earlier_report(reports_dir / folder.name, prints[folder.name]))}
    results |= skipped
    pending = [folder for folder in to_grade if folder.name not in results]

    def row_of(name: str, report: Report) -> dict[str, str]:  # made once per student: the file is rewritten from these
        return books.csv_row(assignment, exercises, names[name], report, duedate=duedate or deadline,
                             person=students.get(names[name]), source=sources[name])

    rows = {name: row_of(name, report) for name, report in results.items()}

    def record(name: str, report: Report) -> None:  # each student's grade on disk as soon as it is known
        write_json(report, reports_dir / name / "REPORT.json")
        if not report.grader_errors and name in prints:  # a failed grading is tried again next time
            replace_atomically(reports_dir / name / GRADED, prints[name] + "\n")
        results[name] = report
        rows[name] = row_of(name, report)
        books.write_csv(csv_path, exercises, [rows[n] for n in sorted(rows, key=names.get)])

    for name, report in skipped.items():
        record(name, report)

    def known(folder: Path) -> frozenset[str]:
        return manifest.unchanged(folder, known_files)

    def extra_flags(folder: Path) -> list[str]:
        if folder in staged_flags:  # graded at a commit: what the commit's files raise
            return staged_flags[folder]
        return template_flags(folder, hashes) if hashes else []

    started = time.monotonic()
    books.write_csv(csv_path, exercises, [rows[n] for n in sorted(rows, key=names.get)])
    # No refresh thread: grading processes are forked from this one.
    with staging, Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"), console=console, auto_refresh=False, transient=False,
    ) as progress:
        task = progress.add_task(f"grading {assignment}", total=len(folders), completed=len(results), last="")
        progress.refresh()
        graded = grade_many(pending, resolved, settings, jobs=jobs, known=known, extra_flags=extra_flags) if pending else []
        for folder, report in graded:
            record(folder.name, report)
            last = escape(clean(f"{names[folder.name]}: {report.score:g}/{report.max_score:g}", 80))
            progress.update(task, advance=1, last=last)
            progress.refresh()
    elapsed = time.monotonic() - started
    ordered = sorted(results.items(), key=lambda item: names[item[0]])
    if gradebook:
        books.write_gradebook(gradebook, assignment, [(names[n], r) for n, r in ordered], duedate=duedate or None)
    pages = class_report.write(csv_path, reports_dir, assignment, rubric,
                               [class_report.Student(names[n], n, r, sources[n], n in skipped) for n, r in ordered])
    flagged = sum(bool(r.flags) for n, r in ordered if n not in skipped)
    failed = sum(bool(r.grader_errors) for _, r in ordered)
    per = elapsed / len(pending) if pending else 0.0
    reused = len(to_grade) - len(pending)
    late = f"{len(skipped)} not graded (see the class report), " if skipped else ""
    console.print(escape(clean(
        f"{len(pending)} submissions graded in {elapsed:.1f} s ({per:.2f} s each, {jobs} at a time), {reused} unchanged "
        f"since an earlier run; {late}{flagged} flagged, {failed} with grader errors; grades in {csv_path}, "
        f"reports in {reports_dir}; the class report: {pages.html} (and {pages.markdown.name})", 1000
    )), soft_wrap=True)
    return 0
