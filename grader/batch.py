"""Grade a whole class: ``python -m grader batch ROOT --assignment ch03 --csv grades.csv``.

:func:`run` grades every folder directly under ROOT (cloned student repositories; the folder
name is the student id) in a pool of grading processes (:mod:`grader.pool`), and writes each
student's REPORT.json as soon as it is known, a CSV with ``nbgrader export``'s columns plus
one column per exercise and the flags (rewritten after every student), and optionally the
scores into an nbgrader gradebook. Every file is replaced atomically, so a batch that is
interrupted loses nothing already graded; run again, it reuses every report whose submission,
grading suite, grader and limits are unchanged (:func:`fingerprint`) and grades the rest.
With ``--template`` (a released template folder) it also flags workflow and test files a
student changed or removed: see :func:`grader.manifest.of_template` and :func:`template_flags`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from pathlib import Path

from grader import manifest
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


def grading_identity(assignment: str, settings: Settings, template: dict[str, str]) -> str:
    """What decides a grade besides the submission: the suite, the solutions, the grader's
    code, the limits, the template."""
    parts = [assignment, json.dumps(dataclasses.asdict(settings), default=str, sort_keys=True),
             json.dumps(template, sort_keys=True)]
    parts += [tree_digest(folder) for folder in (settings.suite_for(assignment), settings.solutions_for(assignment),
                                                 settings.project_root / "grader")]
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


# -- the batch command -------------------------------------------------------------------------


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
    console=None,
) -> int:
    """``batch``: grade every submission folder under ``root``; exit code as in ``grader.cli``."""
    import sys

    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from grader.grade import AssignmentNotFound, load_rubric
    from grader.hygiene import clean
    from grader.pool import grade_many
    from grader.reports import gradebook as books
    from grader.reports import replace_atomically, write_json

    console = console or Console(stderr=True, highlight=False)
    if not root.is_dir():
        print(f"error: {root} is not a folder", file=sys.stderr)
        return 2
    try:
        rubric = load_rubric(assignment, settings)
    except AssignmentNotFound as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    hashes: dict[str, str] = {}
    if template is not None:
        if not template.is_dir():
            print(f"error: template {template} is not a folder", file=sys.stderr)
            return 2
        hashes = manifest.of_template(template)
    folders = submission_folders(root)
    for entry in skipped_entries(root):
        console.print(f"skipped {entry}")
    if not folders:
        print(f"error: no submission folder under {root}; nothing was graded", file=sys.stderr)
        return 2
    reports_dir = reports_dir or csv_path.parent / f"{assignment}-reports"
    reports_dir.mkdir(parents=True, exist_ok=True)
    exercises = [e.name for e in rubric.exercises]
    students = books.read_students(gradebook) if gradebook else {}
    grading = grading_identity(assignment, settings, hashes)
    prints = {folder.name: fingerprint(folder, grading) for folder in folders}
    results = {folder.name: report for folder in folders if (report := earlier_report(reports_dir / folder.name, prints[folder.name]))}
    pending = [folder for folder in folders if folder.name not in results]

    def row_of(name: str, report: Report) -> dict[str, str]:  # made once per student: the file is rewritten from these
        return books.csv_row(assignment, exercises, name, report, duedate=duedate, person=students.get(name))

    rows = {name: row_of(name, report) for name, report in results.items()}

    def record(name: str, report: Report) -> None:  # each student's grade on disk as soon as it is known
        write_json(report, reports_dir / name / "REPORT.json")
        if not report.grader_errors:  # a failed grading is tried again next time
            replace_atomically(reports_dir / name / GRADED, prints[name] + "\n")
        results[name] = report
        rows[name] = row_of(name, report)
        books.write_csv(csv_path, exercises, [rows[n] for n in sorted(rows)])

    started = time.monotonic()
    books.write_csv(csv_path, exercises, [rows[n] for n in sorted(rows)])
    # No refresh thread: grading processes are forked from this one.
    with Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"), console=console, auto_refresh=False, transient=False,
    ) as progress:
        task = progress.add_task(f"grading {assignment}", total=len(folders), completed=len(results), last="")
        progress.refresh()
        graded = grade_many(
            pending, assignment, settings, jobs=jobs,
            known=(lambda r: manifest.unchanged(r, hashes)) if hashes else frozenset(),
            extra_flags=(lambda r: template_flags(r, hashes)) if hashes else None,
        ) if pending else []
        for folder, report in graded:
            record(folder.name, report)
            last = escape(clean(f"{folder.name}: {report.score:g}/{report.max_score:g}", 80))
            progress.update(task, advance=1, last=last)
            progress.refresh()
    elapsed = time.monotonic() - started
    ordered = sorted(results.items())
    if gradebook:
        books.write_gradebook(gradebook, assignment, ordered, duedate=duedate or None)
    flagged = sum(bool(r.flags) for _, r in ordered)
    failed = sum(bool(r.grader_errors) for _, r in ordered)
    per = elapsed / len(pending) if pending else 0.0
    reused = len(folders) - len(pending)
    console.print(escape(clean(
        f"{len(pending)} submissions graded in {elapsed:.1f} s ({per:.2f} s each, {jobs} at a time), {reused} unchanged "
        f"since an earlier run; {flagged} flagged, {failed} with grader errors; grades in {csv_path}, reports in {reports_dir}"
    )), soft_wrap=True)
    return 0
