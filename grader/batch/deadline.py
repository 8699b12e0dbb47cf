"""``batch --deadline``: take a submission's exercise files from its last commit at or before
the deadline, reading the student's git repository without trusting it.

A student's repository is hostile and ``batch`` may run as root. Its ``HEAD`` is resolved here,
through real files only, and git is run on a git folder of the grader's own that borrows the
student's objects and nothing else (:mod:`grader.batch.git_reading`): no configuration, hook,
remote or ref of the repository is ever read, no transport is allowed, no work tree is checked
out, and every output is read as a capped stream. A repository that borrows objects from
elsewhere (``objects/info/alternates``, ``commondir``) or holds symbolic links under its object
store is refused. Sizes are known before a blob is read: the exercise modules are read as blobs,
at most :data:`grader.submission.MAX_MODULE_BYTES` each, and written into a fresh folder that the
usual intake (:func:`grader.submission.take`) then takes, as it takes any submission.

Which date: the **committer** date as git itself reads it to filter (``rev-list --timestamp``:
the ``committer`` line right after the ``author`` line); a commit whose header is not laid out
so is not graded. A student can forge either date, since both are written by their own git;
GitHub Classroom's own deadline uses the time of the push, which is not in the repository at
all. The commit and its time are shown beside the grade, with how many commits came after the
deadline, so that the instructor can compare them with Classroom's record.

Whatever a repository holds, :func:`at_deadline` returns: a failure is that student's
``problem`` (not graded, and why), never the end of the batch.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from grader.batch.commit_flags import is_template, tree_flags
from grader.batch.git_head import resolve_head
from grader.batch.git_reading import Entry, GitError, Reader, TooMany
from grader.submission import MAX_MODULE_BYTES, folders_under, shown

MAX_COMMITS = 100_000  # commits reachable from HEAD looked at
MAX_FOLDER_ENTRIES = 10_000  # entries of exercises/<assignment>/
MAX_HEADER = 256 * 1024  # bytes of a commit read to find its committer line
MAX_OBJECT_ENTRIES = 200_000  # files and folders under .git/objects looked at for links
MAX_REASON = 300
# Entries that make git read another repository's objects or settings.
BORROWING = ("commondir", "objects/info/alternates", "objects/info/http-alternates")
OFFSET = re.compile(rb"([+-])([0-9]{2})([0-9]{2})")


class DeadlineError(ValueError):
    """A deadline that cannot be read."""


def parse(text: str) -> dt.datetime:
    """``--deadline``'s value: ISO 8601 with its time zone (``2026-03-01T23:59:00+01:00``, or ``Z``)."""
    try:
        when = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise DeadlineError(f"--deadline {text!r} is not a date and time; write it as 2026-03-01T23:59:00+01:00") from None
    if when.tzinfo is None:
        stem = text.strip()
        if "T" not in stem.upper() and " " not in stem:  # a date alone: fromisoformat reads it as midnight
            day = stem[:10]
            raise DeadlineError(f"--deadline {text!r} is a date without a time; write the moment with its time "
                                f"zone, for example {day}T23:59:00+00:00 (UTC) or {day}T23:59:00+01:00")
        raise DeadlineError(f"--deadline {text!r} has no time zone; add it, for example {stem}+00:00 (UTC) or {stem}+01:00")
    return when


@dataclass
class AtDeadline:
    """What the deadline chose in one submission folder."""

    commit: str = ""  # the commit graded ("" when none was, or the folder is not a repository)
    committed: str = ""  # its committer date, ISO 8601 with the committer's offset
    sources: dict[str, bytes] = field(default_factory=dict)  # stem -> the module's bytes at that commit
    missing: dict[str, str] = field(default_factory=dict)  # stem -> why it was not taken
    flags: list[str] = field(default_factory=list)
    problem: str = ""  # why nothing can be graded ("" when the commit was found)
    repository: bool = True  # False: no .git folder, the work tree is graded as it is
    later: int = 0  # commits reachable from HEAD whose committer date is after the deadline
    latest: str = ""  # the committer date of the newest of them ("" when none)
    template_commit: bool = False  # the graded commit's exercise modules are all the template's own


def git_folder(folder: Path) -> tuple[Path | None, str]:
    """``folder``'s git folder, or why it cannot be read safely ("" with None: no repository)."""
    git = folder / ".git"
    try:
        info = os.lstat(git)
    except FileNotFoundError:
        return None, ""
    except OSError as exc:
        return None, f".git could not be read ({exc.strerror})"
    if not stat.S_ISDIR(info.st_mode):
        kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "a file pointing elsewhere"
        return None, f".git is {kind}; the grader reads only a repository's own .git folder"
    try:
        objects = os.lstat(git / "objects").st_mode
    except OSError:
        return None, ".git/objects could not be read; it is not a repository git wrote"
    if not stat.S_ISDIR(objects):
        what = "a symbolic link; the grader does not follow it" if stat.S_ISLNK(objects) else "not a folder"
        return None, f".git/objects is {what}"
    for name in BORROWING:
        if os.path.lexists(git / name):
            return None, f".git/{name} borrows another repository's objects; the grader reads only the submission's own"
    seen = 0
    for _folder, entries in folders_under(git / "objects", skip=()):
        for entry in entries:
            seen += 1
            if entry.is_symlink():
                return None, f".git/{shown(Path(os.path.relpath(entry.path, git)))} is a symbolic link; the grader does not follow it"
            if not entry.is_file(follow_symlinks=False) and not entry.is_dir(follow_symlinks=False):
                return None, f".git/{shown(Path(os.path.relpath(entry.path, git)))} is not a regular file (git would wait on it)"
            if seen > MAX_OBJECT_ENTRIES:
                return None, f".git/objects holds more than {MAX_OBJECT_ENTRIES} entries; run git gc in it, or grade without --deadline"
    return git, ""


def _short(exc: BaseException) -> str:
    text = str(exc) if isinstance(exc, OSError) and not exc.errno else f"{type(exc).__name__}: {exc}"
    return shown(Path(text[:MAX_REASON] or type(exc).__name__))


def at_deadline(folder: Path, assignment: str, stems: list[str], deadline: dt.datetime,
                template: dict[str, str] | None = None, compare_with: dict[str, str] | None = None) -> AtDeadline:
    """The exercise modules of ``folder``'s last commit at or before ``deadline`` (committer date).

    ``template`` (relative path -> sha256) names the template's own files, which are not flagged;
    its ``exercises/<assignment>/<stem>.py`` entries (or ``compare_with``'s) tell whether the graded
    commit is the template's (``template_commit``). ``compare_with`` (``--template``'s manifest) adds
    the flags of :func:`grader.batch.template_files.template_flags` for the graded commit's files.
    Never raises: whatever goes wrong is ``problem``."""
    result = AtDeadline()
    try:
        _choose(folder, assignment, stems, deadline, template or {}, compare_with, result)
    except Exception as exc:  # noqa: BLE001 - one repository's failure is that student's, never the batch's
        reason = str(exc) if isinstance(exc, GitError) else _short(exc)
        where = f"commit {result.commit[:12]}" if result.commit else "its git history"
        result.problem = f"{where} could not be read ({shown(Path(reason[:MAX_REASON]))})"
        result.sources, result.missing = {}, {}
    return result


def _choose(folder: Path, assignment: str, stems: list[str], deadline: dt.datetime, template: dict[str, str],
            compare_with: dict[str, str] | None, result: AtDeadline) -> None:
    git, problem = git_folder(folder)
    if git is None:
        result.repository = bool(problem)
        result.problem = problem
        return
    try:
        head = resolve_head(git)
    except GitError as exc:
        result.problem = f"its HEAD could not be resolved ({exc})"
        return
    stamp = int(deadline.timestamp() // 1)
    with Reader(git, head) as reader:
        kind, _size = reader.object_info(head)
        if kind != "commit":
            result.problem = f"its HEAD names a {kind or 'missing object'}, not a commit"
            return
        newest, newest_at = "", -1
        try:
            for line in reader.records("rev-list", "--timestamp", head, "--", separator=b"\n", limit=MAX_COMMITS):
                seconds, _, commit = line.decode("ascii").partition(" ")
                if int(seconds) > stamp:  # the date git filters on
                    result.later += 1
                    if int(seconds) > newest_at:
                        newest, newest_at = commit, int(seconds)
        except TooMany:
            result.problem = f"its history has more than {MAX_COMMITS} commits"
            return
        # git's own choice, as the documentation says: rev-list --before, in its own order
        first = reader.read("rev-list", "--timestamp", "--max-count=1", f"--before=@{stamp}", head, "--", limit=256)
        chosen_at, _, chosen = first.decode("ascii").strip().partition(" ")
        if newest:
            result.latest = committer_date(reader, newest, newest_at)[0]
        if not chosen:
            after = f" (its latest commit, {newest[:12]}, is from {result.latest})" if newest else ""
            result.problem = f"no commit at or before the deadline {deadline.isoformat()}{after}"
            return
        result.commit = chosen
        result.committed, laid_out = committer_date(reader, chosen, int(chosen_at))
        if not laid_out:
            result.problem = (f"commit {chosen[:12]} has no committer line right after its author line, where git "
                              "reads the date it filters on; its date cannot be told")
            return
        listing = read_modules(reader, chosen, assignment, stems, result)
        result.flags += tree_flags(reader, chosen, assignment, stems, template, compare_with)
        result.template_commit = is_template(reader, assignment, stems, listing, {**template, **(compare_with or {})})


def committer_date(reader: Reader, commit: str, seconds: int) -> tuple[str, bool]:
    """``seconds`` (git's own reading of ``commit``'s date) in ISO 8601 with the offset of the
    committer line git reads it from; and whether that line is where git looks for it (after
    the tree, the parents and the author)."""
    header = reader.prefix(MAX_HEADER, "cat-file", "commit", commit).split(b"\n\n", 1)[0]
    lines = header.split(b"\n")
    at = 1 if lines[0].startswith(b"tree ") else len(lines)
    while at < len(lines) and lines[at].startswith(b"parent "):
        at += 1
    laid_out = at + 1 < len(lines) and lines[at].startswith(b"author") and lines[at + 1].startswith(b"committer")
    zone = dt.timezone.utc
    match = OFFSET.fullmatch(lines[at + 1].rsplit(b" ", 1)[-1]) if laid_out else None
    if match and int(match[2]) < 24 and int(match[3]) < 60:
        sign = -1 if match[1] == b"-" else 1
        zone = dt.timezone(sign * dt.timedelta(hours=int(match[2]), minutes=int(match[3])))
    try:
        return dt.datetime.fromtimestamp(seconds, zone).isoformat(), laid_out
    except (OverflowError, ValueError, OSError):
        return f"after the year 9999 ({seconds} s after 1970)", laid_out


def read_modules(reader: Reader, commit: str, assignment: str, stems: list[str], result: AtDeadline) -> dict[str, Entry]:
    """Each exercise module's blob at ``commit``: regular files only, sizes checked before reading.
    Returns the folder's entries by stem."""
    folder = f"exercises/{assignment}/"
    wanted = {f"{folder}{stem}.py".encode(): stem for stem in stems}
    try:
        listing = {wanted[e.path]: e for e in reader.entries(MAX_FOLDER_ENTRIES, commit, "--", folder) if e.path in wanted}
    except TooMany:
        raise GitError(f"{folder} holds more than {MAX_FOLDER_ENTRIES} entries") from None
    for stem in stems:
        relative = f"{folder}{stem}.py"
        entry = listing.get(stem)
        if entry is None:
            result.missing[stem] = f"{relative} is missing from commit {commit[:12]}"
            continue
        mode, kind, obj, size, _path = entry
        if mode == "120000":
            result.missing[stem] = f"{relative} is a symbolic link; the grader only takes regular files"
            result.flags.append(f"{relative} is a symbolic link (refused)")
        elif kind != "blob" or mode not in ("100644", "100755") or size < 0:
            result.missing[stem] = f"{relative} is not a regular file"
        elif size > MAX_MODULE_BYTES:
            result.missing[stem] = f"{relative} is larger than {MAX_MODULE_BYTES // 1024} KiB"
            result.flags.append(f"{relative} is larger than {MAX_MODULE_BYTES // 1024} KiB (refused)")
        else:
            result.sources[stem] = reader.read("cat-file", "blob", obj, limit=MAX_MODULE_BYTES)
    return listing


def write_staged(target: Path, assignment: str, found: AtDeadline) -> Path:
    """A fresh submission folder holding only the modules read at the chosen commit."""
    exercises = target / "exercises" / assignment
    exercises.mkdir(parents=True)
    for stem, data in found.sources.items():
        (exercises / f"{stem}.py").write_bytes(data)
    return target
