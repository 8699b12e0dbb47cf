"""The template manifest, ``.grader/template.json``: the sha256 of every file of a released template.

``release`` writes it; ``check`` (in a student's template) and ``grade`` (in the Classroom job)
read the submission's own copy to leave the template's files (its ``pytest.ini``, ...) unflagged;
``batch --template`` reads the instructor's copy of the template to flag changed workflows and
tests. Paths are relative, in POSIX form, on every OS.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

MANIFEST = ".grader/template.json"
MAX_HASHED_BYTES = 4 * 1024 * 1024  # a larger file is not a template file
MAX_HASHED_FILES = 5000


def file_sha256(path: Path) -> str | None:
    """The sha256 of a regular file (a symbolic link is not followed), or None."""
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_HASHED_BYTES:
            return None
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        return hashlib.sha256(handle.read(MAX_HASHED_BYTES + 1)).hexdigest()


def hash_folder(folder: Path) -> dict[str, str]:
    """``{relative path: sha256}`` of every regular file under ``folder`` (``.git`` and the manifest skipped)."""
    hashes: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for name in sorted(filenames):
            path = Path(dirpath) / name
            relative = path.relative_to(folder).as_posix()
            digest = file_sha256(path)
            if digest is not None and relative != MANIFEST:
                hashes[relative] = digest
            if len(hashes) >= MAX_HASHED_FILES:
                return hashes
    return hashes


def write(out: Path, assignment: str) -> Path:
    """Write ``out``'s manifest: the assignment and every file's sha256."""
    path = out / MANIFEST
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"assignment": assignment, "made_by": "python -m grader release", "files": hash_folder(out)}
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return path


def read(folder: Path) -> dict[str, str]:
    """The files of ``folder``'s manifest (empty when there is none or it is unreadable)."""
    try:
        files = json.loads((Path(folder) / MANIFEST).read_text()).get("files", {})
    except (OSError, ValueError, AttributeError):
        return {}
    return {str(k): str(v).lower() for k, v in files.items()} if isinstance(files, dict) else {}


def of_template(template: Path) -> dict[str, str]:
    """A released template's files and their sha256: from its manifest when the release wrote
    one, else hashed here. A manifest that does not map paths to digests is a ValueError."""
    if not (template / MANIFEST).is_file():
        return hash_folder(template)
    files = read(template)
    if not files or not all(len(digest) == 64 for digest in files.values()):
        raise ValueError(f"{template / MANIFEST} does not map file paths to sha256 digests")
    return files


def unchanged(root: Path, hashes: dict[str, str]) -> frozenset[str]:
    """The paths of ``hashes`` that ``root`` holds with the same content."""
    return frozenset(path for path, digest in hashes.items() if file_sha256(root / path) == digest)
