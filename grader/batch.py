"""Grade many submissions in one run: torch and pytest are imported once, then each
submission is graded in a forked copy of this (trusted) process, ``jobs`` at a time,
all sharing one sandbox zygote.

``python -m grader batch ROOT --assignment ch03 --csv grades.csv`` (:func:`run`) grades every
folder directly under ROOT (cloned student repositories; the folder name is the student
id), writes each student's REPORT.json, a CSV with ``nbgrader export``'s columns plus one
column per exercise and the flags, and optionally the scores into an nbgrader gradebook.
With ``--template`` (a released template folder) it also flags workflow and test files a
student changed or removed: see :func:`template_hashes` and :func:`template_flags`.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import stat
import time
from pathlib import Path
from typing import Callable, Iterator

from grader.model import Report
from grader.sandbox.client import Sandbox
from grader.settings import Settings
from grader.submission import shown


def grade_many(
    roots: list[Path],
    assignment: str,
    settings: Settings,
    *,
    jobs: int = 2,
    known: frozenset[str] | Callable[[Path], frozenset[str]] = frozenset(),
    extra_flags: Callable[[Path], list[str]] | None = None,
) -> Iterator[tuple[Path, Report]]:
    """Yield ``(root, report)`` for every submission folder, in the order they finish.

    ``known`` (relative paths that are part of the template, not flagged) may be a function
    of the submission folder; ``extra_flags(root)`` adds flags. Both run in the submission's
    grading process. A submission whose grading process dies still gets a report (score 0,
    a grader error).
    """
    with Sandbox() as sandbox:
        from grader import environment
        from grader.grade import build_report, grade, load_rubric
        from grader.submission import Taken

        rubric = load_rubric(assignment, settings)  # fails early for an unknown assignment
        environment.verify(sandbox)  # once per batch: a broken environment grades nobody
        _warm_imports()
        pending = list(roots)
        running: dict[int, tuple[Path, int, bytearray]] = {}
        while pending or running:
            while pending and len(running) < jobs:
                root = pending.pop(0)
                read_end, write_end = os.pipe()
                pid = os.fork()
                if pid == 0:  # a trusted grading process for one submission
                    os.close(read_end)
                    code = 0
                    try:
                        report = grade(root, assignment, settings, sandbox, known=known(root) if callable(known) else known)
                        if extra_flags is not None:
                            report.flags += extra_flags(root)
                        data = json.dumps(report.to_dict()).encode()
                        with os.fdopen(write_end, "wb") as out:
                            out.write(data)
                    except BaseException:  # noqa: BLE001 - the parent reports the failure
                        code = 1
                    finally:
                        os._exit(code)
                os.close(write_end)
                running[read_end] = (root, pid, bytearray())
            ready, _, _ = select.select(list(running), [], [])
            for fd in ready:
                root, pid, data = running[fd]
                chunk = os.read(fd, 1 << 20)
                if chunk:
                    data += chunk
                    continue
                os.close(fd)
                os.waitpid(pid, 0)
                del running[fd]
                try:
                    report = Report.from_dict(json.loads(data))
                except (ValueError, KeyError, TypeError):
                    report = build_report(rubric, None, Taken(), {})
                    report.grader_errors.append("the grading process for this submission failed")
                yield root, report


def _warm_imports() -> None:
    """Import what every grading process needs once, before forking."""
    import pytest  # noqa: F401
    import pytest_jsonreport.plugin  # noqa: F401
    import pytest_timeout  # noqa: F401
    import torch  # noqa: F401

    import grader.checks  # noqa: F401
    import grader.plugin  # noqa: F401


# -- the template: which files of a submission are the instructor's, unchanged ---------------

TEMPLATE_MANIFEST = Path(".grader") / "template.json"
MAX_HASHED_BYTES = 4 * 1024 * 1024
MAX_HASHED_FILES = 5000


def file_sha256(path: Path) -> str | None:
    """The sha256 of a regular file (a symbolic link is not followed), or None."""
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_HASHED_BYTES:
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        return hashlib.sha256(handle.read(MAX_HASHED_BYTES + 1)).hexdigest()


def hash_folder(folder: Path) -> dict[str, str]:
    """``{relative path: sha256}`` of every regular file under ``folder`` (``.git`` skipped)."""
    hashes: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for name in sorted(filenames):
            path = Path(dirpath) / name
            digest = file_sha256(path)
            if digest is not None:
                hashes[str(path.relative_to(folder))] = digest
            if len(hashes) >= MAX_HASHED_FILES:
                return hashes
    return hashes


def template_hashes(template: Path) -> dict[str, str]:
    """sha256 per file of a released template: from its ``.grader/template.json`` when the
    release wrote one (``{"files": {path: sha256}}`` or ``{path: sha256}``), else hashed here."""
    manifest = template / TEMPLATE_MANIFEST
    if manifest.is_file():
        data = json.loads(manifest.read_text())
        files = data.get("files", data) if isinstance(data, dict) else None
        if isinstance(files, dict) and all(isinstance(v, str) for v in files.values()):
            return {str(Path(k)): v.lower() for k, v in files.items()}
        raise ValueError(f"{manifest} does not map file paths to sha256 digests")
    return {k: v for k, v in hash_folder(template).items() if not k.startswith(str(TEMPLATE_MANIFEST.parent) + os.sep)}


def unchanged_files(root: Path, hashes: dict[str, str]) -> frozenset[str]:
    """The template's files that ``root`` holds unchanged (not flagged by the scan)."""
    return frozenset(path for path, digest in hashes.items() if file_sha256(root / path) == digest)


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
        actual = file_sha256(root / path)
        if actual is None:
            there = os.path.lexists(root / path)
            flags.append(f"{path} was {'replaced by something that is not a regular file' if there else 'removed'} (template file)")
        elif actual != digest:
            flags.append(f"{path} was changed from the template")
    workflows = root / ".github" / "workflows"
    if workflows.is_dir() and not workflows.is_symlink():
        for entry in sorted(os.listdir(workflows))[:100]:
            relative = str(Path(".github") / "workflows" / entry)
            if relative not in hashes:
                flags.append(f"{relative} is a workflow that is not in the template")
    return flags


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
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from grader.grade import AssignmentNotFound, load_rubric
    from grader.reports import gradebook as books
    from grader.reports import write_json

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
        hashes = template_hashes(template)
    folders = submission_folders(root)
    for entry in skipped_entries(root):
        console.print(f"skipped {entry}")
    if not folders:
        print(f"error: no submission folder under {root}; nothing was graded", file=sys.stderr)
        return 2
    reports_dir = reports_dir or csv_path.parent / f"{assignment}-reports"
    reports_dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Report] = {}
    started = time.monotonic()
    # No refresh thread: grading processes are forked from this one.
    with Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"), console=console, auto_refresh=False, transient=False,
    ) as progress:
        task = progress.add_task(f"grading {assignment}", total=len(folders), last="")
        progress.refresh()
        for folder, report in grade_many(
            folders, assignment, settings, jobs=jobs,
            known=(lambda r: unchanged_files(r, hashes)) if hashes else frozenset(),
            extra_flags=(lambda r: template_flags(r, hashes)) if hashes else None,
        ):
            results[folder.name] = report
            target = reports_dir / folder.name
            target.mkdir(exist_ok=True)
            write_json(report, target / "REPORT.json")
            progress.update(task, advance=1, last=f"{folder.name}: {report.score:g}/{report.max_score:g}")
            progress.refresh()
    elapsed = time.monotonic() - started
    ordered = sorted(results.items())
    students = books.read_students(gradebook) if gradebook else {}
    books.write_csv(csv_path, assignment, [e.name for e in rubric.exercises], ordered, duedate=duedate, students=students)
    if gradebook:
        books.write_gradebook(gradebook, assignment, ordered, duedate=duedate or None)
    flagged = sum(bool(r.flags) for _, r in ordered)
    failed = sum(bool(r.grader_errors) for _, r in ordered)
    per = elapsed / len(ordered) if ordered else 0.0
    console.print(
        f"{len(ordered)} submissions in {elapsed:.1f} s ({per:.2f} s each, {jobs} at a time); "
        f"{flagged} flagged, {failed} with grader errors; grades in {csv_path}, reports in {reports_dir}"
    )
    return 0
