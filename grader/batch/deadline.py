"""``batch --deadline``: take a submission's exercise files from its last commit at or before
the deadline, reading the student's git repository without trusting it.

A student's repository is hostile and ``batch`` may run as root, so git is run only in ways that
execute nothing the repository configures: the git folder is named explicitly (``--git-dir``,
a real folder, never a ``.git`` file or link that points elsewhere); system and global
configuration are off; every repository setting that could run a program (fsmonitor, hooks,
pager, signature checks, ssh) is overridden on the command line; only plumbing that reads
objects is used (``rev-list``, ``cat-file``, ``ls-tree``), which applies no filter, alias or
hook; no work tree is checked out. A repository that borrows objects from elsewhere
(``objects/info/alternates``, ``commondir``) or whose object store is a symbolic link is refused.
The exercise modules are read as blobs, at most :data:`grader.submission.MAX_MODULE_BYTES`
each, and written into a fresh folder that the usual intake (:func:`grader.submission.take`)
then takes, as it takes any submission.

Which date: the **committer** date, the one ``git rev-list --before`` filters on (a rebase or
an amend renews it, the author date survives both). A student can forge either, since both
are written by their own git; GitHub Classroom's own deadline uses the time of the push, which
is not in the repository at all. The commit and its time are shown beside the grade so that
the instructor can compare them with Classroom's record.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from grader.submission import CONFIGURING, MAX_MODULE_BYTES, folders_under, shown

GIT_TIMEOUT = 30.0
MAX_LISTING = 1 << 20  # bytes of a tree listing read at most
MAX_FLAGS = 50
MAX_OBJECT_ENTRIES = 200_000  # files and folders under .git/objects looked at for links
# What no student repository may configure for us: each could run a program or reach out.
OVERRIDES = (
    "core.fsmonitor=false", "core.hooksPath=/dev/null", "core.pager=cat", "core.sshCommand=/bin/false",
    "core.askPass=/bin/false", "log.showSignature=false", "gpg.program=/bin/false", "protocol.allow=never",
    "diff.external=", "core.alternateRefsCommand=/bin/false",
)
# Entries of a git folder that must be what git expects, not symbolic links to elsewhere.
MUST_BE_REAL = ("objects", "refs", "HEAD", "config", "packed-refs")
# Entries that make git read another repository's objects or settings.
BORROWING = ("commondir", "objects/info/alternates", "objects/info/http-alternates")


class DeadlineError(ValueError):
    """A deadline that cannot be read."""


def parse(text: str) -> dt.datetime:
    """``--deadline``'s value: ISO 8601 with its time zone (``2026-03-01T23:59:00+01:00``, or ``Z``)."""
    try:
        when = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise DeadlineError(f"--deadline {text!r} is not a date and time; write it as 2026-03-01T23:59:00+01:00") from None
    if when.tzinfo is None:
        raise DeadlineError(f"--deadline {text!r} has no time zone; add it, for example {text}+00:00 (UTC) or {text}+01:00")
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
    for name in MUST_BE_REAL:
        if os.path.islink(git / name):
            return None, f".git/{name} is a symbolic link; the grader does not follow it"
    for name in BORROWING:
        if os.path.lexists(git / name):
            return None, f".git/{name} borrows another repository's objects; the grader reads only the submission's own"
    seen = 0
    for _folder, entries in folders_under(git / "objects", skip=()):
        for entry in entries:
            seen += 1
            if entry.is_symlink():
                return None, f".git/{shown(Path(os.path.relpath(entry.path, git)))} is a symbolic link; the grader does not follow it"
            if seen > MAX_OBJECT_ENTRIES:
                return None, f".git/objects holds more than {MAX_OBJECT_ENTRIES} entries; run git gc in it, or grade without --deadline"
    return git, ""


def _run(git: Path, *args: str, limit: int = MAX_LISTING) -> bytes:
    """Run a read-only git command on ``git``; its output (at most ``limit`` bytes). OSError when it fails."""
    command = ["git", "--no-pager", "--git-dir", str(git), "-c", f"safe.directory={git}"]
    for setting in OVERRIDES:
        command += ["-c", setting]
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent", "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0",
        "GIT_NO_REPLACE_OBJECTS": "1", "GIT_OPTIONAL_LOCKS": "0", "GIT_ATTR_NOSYSTEM": "1",
        "GIT_CEILING_DIRECTORIES": str(git.parent.parent),
    }
    try:
        done = subprocess.run(command + list(args), capture_output=True, env=env, timeout=GIT_TIMEOUT,
                              stdin=subprocess.DEVNULL, cwd="/")
    except subprocess.TimeoutExpired:
        raise OSError(f"git {args[0]} took more than {GIT_TIMEOUT:g} s") from None
    if done.returncode != 0:
        raise OSError(done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"git {args[0]} failed"])
    return done.stdout[:limit]


def committer_time(git: Path, commit: str) -> tuple[int, str]:
    """The committer date of ``commit``: seconds since the epoch, and ISO 8601 with its offset."""
    header = _run(git, "cat-file", "commit", commit, limit=64 * 1024).split(b"\n\n", 1)[0]
    for line in header.split(b"\n"):
        if line.startswith(b"committer "):
            seconds, offset = line.rsplit(b" ", 2)[-2:]
            sign = -1 if offset[:1] == b"-" else 1
            zone = dt.timezone(sign * dt.timedelta(hours=int(offset[1:3]), minutes=int(offset[3:5])))
            when = dt.datetime.fromtimestamp(int(seconds), zone)
            return int(seconds), when.isoformat()
    raise OSError(f"commit {commit[:12]} has no committer line")


def at_deadline(folder: Path, assignment: str, stems: list[str], deadline: dt.datetime,
                template: dict[str, str] | None = None) -> AtDeadline:
    """The exercise modules of ``folder``'s last commit at or before ``deadline`` (committer date).

    ``template`` (relative path -> sha256) names the template's own files, which are not flagged."""
    result = AtDeadline()
    git, problem = git_folder(folder)
    if git is None:
        result.repository = bool(problem)
        result.problem = problem
        return result
    stamp = int(deadline.timestamp())
    try:
        found = _run(git, "rev-list", "--max-count=1", f"--before=@{stamp}", "HEAD", "--").decode().strip()
    except (OSError, UnicodeDecodeError) as exc:
        result.problem = f"its git history could not be read ({shown(Path(str(exc)))})"
        return result
    if not found:
        try:
            latest = _run(git, "rev-list", "--max-count=1", "HEAD", "--").decode().strip()
            when = f" (its last commit, {latest[:12]}, is from {committer_time(git, latest)[1]})" if latest else ""
        except (OSError, UnicodeDecodeError, ValueError):
            when = ""
        result.problem = f"no commit at or before the deadline {deadline.isoformat()}{when}"
        return result
    try:
        result.commit = found
        result.committed = committer_time(git, found)[1]
        read_modules(git, found, assignment, stems, result)
        result.flags += tree_flags(git, found, assignment, stems, template)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        result.problem = f"commit {found[:12]} could not be read ({shown(Path(str(exc)))})"
    return result


def _entries(listing: bytes) -> list[tuple[str, str, str, bytes]]:
    """``git ls-tree -z`` output as (mode, kind, object, path) entries."""
    entries = []
    for record in listing.split(b"\0"):
        if b"\t" not in record:
            continue
        meta, path = record.split(b"\t", 1)
        mode, kind, obj = meta.decode("ascii", "replace").split(" ")[:3]
        entries.append((mode, kind, obj, path))
    return entries


def read_modules(git: Path, commit: str, assignment: str, stems: list[str], result: AtDeadline) -> None:
    """Each exercise module's blob at ``commit``: regular files only, at most MAX_MODULE_BYTES."""
    folder = f"exercises/{assignment}/"
    listing = {path: (mode, kind, obj) for mode, kind, obj, path in
               _entries(_run(git, "ls-tree", "-z", "--full-tree", commit, "--", folder))}
    for stem in stems:
        relative = f"{folder}{stem}.py"
        entry = listing.get(relative.encode())
        if entry is None:
            result.missing[stem] = f"{relative} is missing from commit {commit[:12]}"
            continue
        mode, kind, obj = entry
        if mode == "120000":
            result.missing[stem] = f"{relative} is a symbolic link; the grader only takes regular files"
            result.flags.append(f"{relative} is a symbolic link (refused)")
            continue
        if kind != "blob" or mode not in ("100644", "100755"):
            result.missing[stem] = f"{relative} is not a regular file"
            continue
        size = int(_run(git, "cat-file", "-s", obj, limit=64).strip() or b"0")
        if size > MAX_MODULE_BYTES:
            result.missing[stem] = f"{relative} is larger than {MAX_MODULE_BYTES // 1024} KiB"
            result.flags.append(f"{relative} is larger than {MAX_MODULE_BYTES // 1024} KiB (refused)")
            continue
        result.sources[stem] = _run(git, "cat-file", "blob", obj, limit=MAX_MODULE_BYTES + 1)


def tree_flags(git: Path, commit: str, assignment: str, stems: list[str], template: dict[str, str] | None = None) -> list[str]:
    """What the usual intake would flag in the files of ``commit``, from their names (a
    configuration file is read only to compare it with the template's own)."""
    flags = []
    folder = ("exercises", assignment)
    modules = {f"{s}.py" for s in stems}
    for mode, _kind, obj, raw in _entries(_run(git, "ls-tree", "-r", "-z", "--full-tree", commit)):
        path = Path(os.fsdecode(raw))
        name, here = path.name, path.parts[:-1]
        if name in CONFIGURING or name.endswith(".pth"):
            if not _unchanged(git, obj, path, template or {}):
                flags.append(f"{shown(path)} tries to configure pytest or Python (ignored by the grader)")
        elif here == folder and name.endswith(".py") and name not in modules:
            flags.append(f"{shown(path)} is not an exercise module (ignored by the grader)")
        elif mode == "120000" and not (here == folder and name in modules):
            flags.append(f"{shown(path)} is a symbolic link")
        if len(flags) >= MAX_FLAGS:
            return flags + ["more files flagged; the rest were not listed"]
    return flags


def _unchanged(git: Path, obj: str, path: Path, template: dict[str, str]) -> bool:
    """Whether the blob ``obj`` at ``path`` is the template's own file there, unchanged."""
    digest = template.get(path.as_posix())
    if digest is None:
        return False
    data = _run(git, "cat-file", "blob", obj, limit=MAX_MODULE_BYTES + 1)
    return len(data) <= MAX_MODULE_BYTES and hashlib.sha256(data).hexdigest() == digest


def write_staged(target: Path, assignment: str, found: AtDeadline) -> Path:
    """A fresh submission folder holding only the modules read at the chosen commit."""
    exercises = target / "exercises" / assignment
    exercises.mkdir(parents=True)
    for stem, data in found.sources.items():
        (exercises / f"{stem}.py").write_bytes(data)
    return target
