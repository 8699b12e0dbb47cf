"""Resuming a class: which reports of an earlier run still stand (the same submission, suite,
solutions, grader, limits and template), by a fingerprint kept beside each report."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path

from grader import manifest
from grader.assignment import Assignment
from grader.model import Report
from grader.settings import Settings
from grader.submission import folders_under


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
