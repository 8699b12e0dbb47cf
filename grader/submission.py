"""Take a submission: copy only the assignment's exercise modules, and flag everything odd.

Nothing else of a submission is ever read by the grader: not its tests, its configuration,
its other Python files. Flags only name such files, for the instructor to look at.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from grader.hygiene import UNSAFE_IN_A_NAME

MAX_MODULE_BYTES = 256 * 1024
MAX_SCANNED = 5000
MAX_FLAGS = 50
MAX_NAME = 200

# Files that configure pytest or Python, wherever they are in a submission.
CONFIGURING = {
    "conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini", "setup.py",
    "sitecustomize.py", "usercustomize.py", ".pythonrc.py", "torch.py", "pytest.py", "grader.py",
}


@dataclass
class Taken:
    """What was copied, what was refused or missing (with the reason), and the flags raised."""

    copied: list[str] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)


def is_submission(path: Path, assignment: str) -> bool:
    """Whether a folder is a student's: a git repository, or one holding ``exercises/<assignment>/``."""
    return os.path.lexists(path / ".git") or (path / "exercises" / assignment).is_dir()


def take(root: Path, assignment: str, stems: list[str], dest: Path, *, known: frozenset[str] = frozenset()) -> Taken:
    """Copy ``exercises/<assignment>/<stem>.py`` from ``root`` into ``dest`` for every stem.

    Only regular files are taken: a symbolic link (the file's or a folder's on the way) is
    refused, never followed. ``known`` lists relative paths that are part of the template and
    so are not flagged.
    """
    taken = Taken()
    folder = Path("exercises") / assignment
    refused_folder = _link_on_the_way(root, folder)
    for stem in stems:
        relative = folder / f"{stem}.py"
        if refused_folder:
            taken.missing[stem] = f"{refused_folder} is a symbolic link; the grader only takes regular files"
            continue
        reason = _copy_module(root / relative, dest / f"{stem}.py")
        if reason:
            taken.missing[stem] = f"{relative} {reason}"
            if "symbolic link" in reason or "regular file" in reason:
                taken.flags.append(f"{relative} {reason.split(';')[0]} (refused)")
        else:
            taken.copied.append(stem)
    if refused_folder:
        taken.flags.append(f"{refused_folder} is a symbolic link (refused)")
    taken.flags += scan_flags(root, folder, {f"{s}.py" for s in stems}, known)
    return taken


def _link_on_the_way(root: Path, folder: Path) -> str:
    current = root
    for part in folder.parts:
        current = current / part
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return str(current.relative_to(root))
        except FileNotFoundError:
            return ""
    return ""


def _copy_module(source: Path, target: Path) -> str:
    """Copy one module; return why it was not taken, or "" when it was."""
    try:
        info = os.lstat(source)
    except FileNotFoundError:
        return "is missing from your submission"
    except OSError as exc:
        return f"could not be read ({exc.strerror})"
    if stat.S_ISLNK(info.st_mode):
        return "is a symbolic link; the grader only takes regular files"
    if not stat.S_ISREG(info.st_mode):
        return "is not a regular file"
    if info.st_size > MAX_MODULE_BYTES:
        return f"is larger than {MAX_MODULE_BYTES // 1024} KiB"
    try:  # non-blocking: a FIFO swapped in after the lstat must not hang the grader
        fd = os.open(source, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        return f"could not be read ({exc.strerror})"
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "is not a regular file"
        data = handle.read(MAX_MODULE_BYTES + 1)
    if len(data) > MAX_MODULE_BYTES:
        return f"is larger than {MAX_MODULE_BYTES // 1024} KiB"
    target.write_bytes(data)
    target.chmod(0o644)
    return ""


def folders_under(root: Path, skip: tuple[str, ...] = (".git",)) -> Iterator[tuple[str, list[os.DirEntry]]]:
    """``(folder, its entries by name)`` for ``root`` and every folder under it, depth first,
    without following links or recursing (a submission may nest folders very deep);
    entries named in ``skip`` are left out, and not entered."""
    pending = [str(root)]
    while pending:
        dirpath = pending.pop()
        try:
            entries = sorted((e for e in os.scandir(dirpath) if e.name not in skip), key=lambda entry: entry.name)
        except OSError:
            continue
        pending += reversed([e.path for e in entries if e.is_dir(follow_symlinks=False)])
        yield dirpath, entries


def scan_flags(root: Path, folder: Path, modules: set[str], known: frozenset[str]) -> list[str]:
    """Name files that try to configure pytest or Python, or that the grader ignores."""
    flags = []
    scanned = 0
    for dirpath, entries in folders_under(root):
        here = Path(dirpath).relative_to(root)
        for entry in entries:
            scanned += 1
            if scanned > MAX_SCANNED:
                return _capped(flags) + [f"more than {MAX_SCANNED} files; the rest were not scanned"]
            name, relative = entry.name, here / entry.name
            link = entry.is_symlink()
            if entry.is_dir(follow_symlinks=False):
                continue
            if relative.as_posix() in known:  # the manifest's paths are POSIX on every OS
                continue
            if name in CONFIGURING or name.endswith(".pth"):
                flags.append(f"{shown(relative)} tries to configure pytest or Python (ignored by the grader)")
            elif here == folder and name.endswith(".py") and name not in modules:
                flags.append(f"{shown(relative)} is not an exercise module (ignored by the grader)")
            elif link and not (here == folder and name in modules):
                flags.append(f"{shown(relative)} is a symbolic link")
            elif UNSAFE_IN_A_NAME.search(name):
                flags.append(f"{shown(relative)} has control or invisible characters, line breaks or bytes that are not UTF-8 in its name")
    return _capped(flags)


def shown(path: Path) -> str:
    """A submission's file name as it may appear in a report: unsafe characters escaped
    (bytes that are not UTF-8 as ``\\xNN``)."""
    text = os.fsencode(str(path)).decode("utf-8", "backslashreplace")
    text = UNSAFE_IN_A_NAME.sub(lambda match: match.group().encode("unicode_escape").decode(), text)
    return text if len(text) <= MAX_NAME else text[: MAX_NAME // 2] + "…" + text[-(MAX_NAME // 2 - 1):]


def _capped(flags: list[str]) -> list[str]:
    if len(flags) <= MAX_FLAGS:
        return flags
    return flags[:MAX_FLAGS] + [f"and {len(flags) - MAX_FLAGS} more files flagged"]
