"""The class folder: which entries are students' submissions, and each student's id (the login,
where folders follow GitHub Classroom's ``<slug>-<login>`` naming).

An id depends on the folders' own names, never on the class folder's name or place, so the same
class graded again under another root gets the same ids: the Classroom slug is the part every
folder's name shares up to a hyphen (or, for a class of one, the ``<slug>`` of a root named
``<slug>-submissions``; or what ``--classroom-slug`` says). Ids are cleaned as every report
cleans them; two folders never share one (a colliding id gets a suffix made from its folder's name).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from grader.hygiene import NAME, clean
from grader.submission import is_submission, shown


SUBMISSIONS_SUFFIX = "-submissions"  # gh classroom clone student-repos: <assignment-slug>-submissions/


def submission_folders(root: Path, assignment: str) -> list[Path]:
    """Every student's folder directly under ``root`` (not hidden, not a symbolic link), by name."""
    return sorted(
        p for p in root.iterdir()
        if p.is_dir() and not p.is_symlink() and not p.name.startswith(".") and is_submission(p, assignment)
    )


def skipped_entries(root: Path, assignment: str) -> list[str]:
    """What directly under ``root`` is not graded (hidden entries aside), each with the reason."""
    skipped = []
    for path in sorted(root.iterdir()):
        if path.name.startswith("."):
            continue
        if path.is_symlink():
            skipped.append(f"{shown(Path(path.name))}: a symbolic link (batch follows none; give it the real folders)")
        elif not path.is_dir():
            skipped.append(f"{shown(Path(path.name))}: not a folder")
        elif not is_submission(path, assignment):
            skipped.append(f"{shown(Path(path.name))}: not a submission (neither a git repository nor "
                           f"exercises/{assignment}/ in it)")
    return skipped


def one_submission(root: Path) -> str:
    """Why ``root`` looks like one student's submission rather than a class ("" when it does not)."""
    for name, what in (("exercises", "an exercises/ folder"), (".git", "a .git folder")):
        if os.path.lexists(root / name):
            return (f"{shown(root)} has {what} at its top: it looks like one submission, not a class. batch expects "
                    "a folder holding one folder per student (such as the one 'gh classroom clone student-repos' "
                    "makes); to grade one submission use: python -m grader grade " + shown(root))
    return ""


def classroom_prefix(root: Path, folders: list[Path], slug: str = "") -> str:
    """The ``<slug>-`` part of GitHub Classroom's folder names, or "" when they do not follow it.

    ``slug`` (``--classroom-slug``) when given. Else the part up to and including a hyphen that
    most folders' names share (two at least; the longest of equals): ``attention-ch03-`` for
    ``attention-ch03-alice`` and ``attention-ch03-bob``, whatever the class folder is called.
    A root named ``<slug>-submissions`` (as ``gh classroom clone`` makes it) settles where the
    slug ends when the names share more (logins that begin alike), and names the slug of a class of one."""
    if slug:
        return slug.rstrip("-") + "-"
    names = [f.name for f in folders]
    said = root.name[: -len(SUBMISSIONS_SUFFIX)] + "-" if root.name.endswith(SUBMISSIONS_SUFFIX) else ""
    shared: dict[str, int] = {}
    for name in names:
        for at in (i for i, c in enumerate(name[:-1]) if c == "-"):
            shared[name[: at + 1]] = shared.get(name[: at + 1], 0) + 1
    if not shared or max(shared.values()) < 2:
        return said if len(names) == 1 and len(said) > 1 and said in shared else ""
    most = max(shared.values())
    prefix = max((p for p, n in shared.items() if n == most), key=len)
    return said if len(said) > 1 and prefix.startswith(said) and shared.get(said) == most else prefix


def student_names(folders: list[Path], prefix: str) -> tuple[dict[str, str], list[str]]:
    """Each folder's student id (the login after ``prefix``, else the folder's name), cleaned as
    reports clean names, and the notes on ids that had to be told apart.

    Two folders never share an id: two that would share a login keep their full names; when
    cleaning (control or bidirectional characters dropped, long names cut) would still make two
    ids one, each id that cleaning changed gets ``~`` and six hex digits of its folder name's
    sha256, the same in every run."""
    logins = {f.name: f.name[len(prefix):] if prefix and f.name.startswith(prefix) and len(f.name) > len(prefix) else f.name
              for f in folders}
    taken = list(logins.values())
    raw = {name: login if taken.count(login) == 1 else name for name, login in logins.items()}
    ids = {name: clean(value, NAME - 7) or "student" for name, value in raw.items()}
    count: dict[str, int] = {}
    for value in ids.values():
        count[value] = count.get(value, 0) + 1
    notes = []
    for name, value in sorted(ids.items()):
        if count[value] > 1 and value != raw[name]:  # an id that cleaning left as it was stays
            ids[name] = f"{value}~{hashlib.sha256(os.fsencode(name)).hexdigest()[:6]}"
            notes.append(f"{shown(Path(name))} is graded as {ids[name]}: its id {value} would be another folder's too")
    return ids, notes
