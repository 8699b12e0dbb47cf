"""Take a submission: copy only the assignment's exercise modules, and flag everything odd.

Nothing else of a submission is ever read by the grader: not its tests, its configuration,
its other Python files. Flags only name such files, for the instructor to look at.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

MAX_MODULE_BYTES = 256 * 1024
MAX_SCANNED = 5000

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
            if "symbolic link" in reason:
                taken.flags.append(f"{relative} is a symbolic link (refused)")
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
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        return f"could not be read ({exc.strerror})"
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_MODULE_BYTES + 1)
    target.write_bytes(data)
    target.chmod(0o644)
    return ""


def scan_flags(root: Path, folder: Path, modules: set[str], known: frozenset[str]) -> list[str]:
    """Name files that try to configure pytest or Python, or that the grader ignores."""
    flags = []
    scanned = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        here = Path(dirpath).relative_to(root)
        for name in sorted(filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]):
            scanned += 1
            if scanned > MAX_SCANNED:
                return flags + [f"more than {MAX_SCANNED} files; the rest were not scanned"]
            relative = here / name
            if str(relative) in known:
                continue
            if name in CONFIGURING or name.endswith(".pth"):
                flags.append(f"{relative} tries to configure pytest or Python (ignored by the grader)")
            elif here == folder and name.endswith(".py") and name not in modules:
                flags.append(f"{relative} is not an exercise module (ignored by the grader)")
            elif os.path.islink(os.path.join(dirpath, name)) and not (here == folder and name in modules):
                flags.append(f"{relative} is a symbolic link")
    return flags
