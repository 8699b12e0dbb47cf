"""The class folder: which entries are submissions, and each student's name (the login, where
folders follow GitHub Classroom's ``<assignment>-<login>`` naming)."""

from __future__ import annotations

import os
from pathlib import Path

from grader.submission import shown


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
