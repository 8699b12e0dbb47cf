"""What a commit's files raise, read from a student's repository without checking it out
(``batch --deadline``, :mod:`grader.batch.deadline`): the flags the usual intake and
:func:`~grader.batch.template_files.template_flags` would raise on the same files, and whether
the commit holds only the template's stubs (no work).
"""

from __future__ import annotations

import os
from pathlib import Path

from grader.batch.git_reading import Entry, Reader, TooMany
from grader.batch.template_files import guarded
from grader.submission import CONFIGURING, shown

MAX_TREE_ENTRIES = 100_000  # files of the graded commit looked at
MAX_HASHED = 4 * 1024 * 1024  # a larger blob is not a template file (as grader.manifest)
MAX_FLAGS = 50


def tree_flags(reader: Reader, commit: str, assignment: str, stems: list[str], template: dict[str, str],
               compare_with: dict[str, str] | None = None) -> list[str]:
    """What the usual intake would flag in the files of ``commit``, from their names (a
    configuration file is read only to compare it with the template's own), and with
    ``compare_with`` what :func:`~grader.batch.template_files.template_flags` flags."""
    flags: list[str] = []
    folder = ("exercises", assignment)
    modules = {f"{s}.py" for s in stems}
    kept: dict[str, Entry] = {}  # the entries compare_with asks about
    workflows: set[str] = set()
    complete = True
    try:
        for entry in reader.entries(MAX_TREE_ENTRIES, "-r", commit):
            mode, raw = entry.mode, entry.path
            path = Path(os.fsdecode(raw))
            name, here = path.name, path.parts[:-1]
            if compare_with is not None:
                if path.as_posix() in compare_with:
                    kept[path.as_posix()] = entry
                if path.parts[:2] == (".github", "workflows") and len(path.parts) > 2:
                    workflows.add(path.parts[2])
            if len(flags) >= MAX_FLAGS:
                continue
            if name in CONFIGURING or name.endswith(".pth"):
                if template.get(path.as_posix()) is None or reader.sha256(entry, MAX_HASHED) != template[path.as_posix()]:
                    flags.append(f"{shown(path)} tries to configure pytest or Python (ignored by the grader)")
            elif here == folder and name.endswith(".py") and name not in modules:
                flags.append(f"{shown(path)} is not an exercise module (ignored by the grader)")
            elif mode == "120000" and not (here == folder and name in modules):
                flags.append(f"{shown(path)} is a symbolic link")
    except TooMany:
        complete = False
        flags.append(f"commit {commit[:12]} holds more than {MAX_TREE_ENTRIES} files; the rest were not looked at")
    if len(flags) >= MAX_FLAGS:
        flags = flags[:MAX_FLAGS] + ["more files flagged; the rest were not listed"]
    if compare_with is not None:
        flags += _template_flags(reader, compare_with, kept, workflows, complete)
    return flags


def _template_flags(reader: Reader, hashes: dict[str, str], kept: dict[str, Entry], workflows: set[str],
                    complete: bool) -> list[str]:
    """``template_flags``'s flags, worded as it words them, for the files of a commit."""
    flags = []
    for path, digest in sorted(hashes.items()):
        if not guarded(path):
            continue
        entry = kept.get(path)
        if entry is None:
            if complete:
                flags.append(f"{shown(Path(path))} was removed (template file)")
        elif not entry.regular:
            flags.append(f"{shown(Path(path))} was replaced by something that is not a regular file (template file)")
        elif reader.sha256(entry, MAX_HASHED) != digest:
            flags.append(f"{shown(Path(path))} was changed from the template")
    for name in sorted(workflows)[:100]:
        relative = f".github/workflows/{name}"
        if relative not in hashes:
            flags.append(f"{shown(Path(relative))} is a workflow that is not in the template")
    return flags


def is_template(reader: Reader, assignment: str, stems: list[str], listing: dict[str, Entry], hashes: dict[str, str]) -> bool:
    """Whether no exercise module of the commit differs from the template's stub (a module left
    out is no work either); False when the template's stubs are not known."""
    known = {stem: hashes[f"exercises/{assignment}/{stem}.py"] for stem in stems if f"exercises/{assignment}/{stem}.py" in hashes}
    if not known:
        return False
    for stem in stems:
        entry = listing.get(stem)
        if entry is not None and (stem not in known or reader.sha256(entry, MAX_HASHED) != known[stem]):
            return False
    return True
