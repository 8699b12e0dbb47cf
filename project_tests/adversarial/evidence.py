"""What a hostile run must leave as it found it: snapshots of the stage's files before and after
grading, and the secrets and hidden lines that must not appear in anything a student can read.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import jsonschema

from project_tests.adversarial.harness import ASSIGNMENT, ROOT, SITE, STDLIB, Stage, walk

REPORT_SCHEMA = json.loads((ROOT / "docs" / "report.schema.json").read_text())


# -- what must not change -----------------------------------------------------------------------


def hash_tree(folder: Path) -> dict[str, str]:
    """sha256 of every file under ``folder`` (symbolic links by their target), and every folder."""
    hashes = {}
    if not folder.exists():
        return hashes
    for path in walk(folder)[1:]:
        relative = str(path.relative_to(folder))
        if path.is_symlink():
            hashes[relative] = "link:" + os.readlink(path)
        elif path.is_dir():
            hashes[relative] = "dir"
        elif path.is_fifo():
            hashes[relative] = "fifo"
        elif path.is_file():
            hashes[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


def listing(folder: Path, depth: int = 2) -> dict[str, tuple]:
    """Names, sizes and modification times under ``folder``, ``depth`` levels down."""
    entries = {}
    stack = [(folder, 0)]
    while stack:
        current, level = stack.pop()
        for entry in os.scandir(current):
            info = entry.stat(follow_symlinks=False)
            entries[os.path.relpath(entry.path, folder)] = (info.st_size, info.st_mtime_ns, info.st_uid)
            if entry.is_dir(follow_symlinks=False) and level + 1 < depth:
                stack.append((Path(entry.path), level + 1))
    return entries


def snapshot(stage: Stage, folders: dict[str, Path]) -> dict[str, object]:
    """Everything hostile code must not be able to change."""
    shot: dict[str, object] = {name: hash_tree(path) for name, path in folders.items()}
    shot["repo"] = hash_tree(stage.repo)
    shot["gh"] = hash_tree(stage.gh)
    shot["site-packages"] = listing(SITE)
    shot["stdlib"] = listing(STDLIB, depth=1)
    return shot


def changes(before: dict, after: dict) -> list[str]:
    """What differs between two snapshots, one line each."""
    lines = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name, {}), after.get(name, {})
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                lines.append(f"{name}: {key}: {old.get(key)!r} -> {new.get(key)!r}")
    return lines


# -- what must not leak -------------------------------------------------------------------------


def hidden_lines(stage: Stage) -> list[str]:
    """Lines of the hidden suite and of the solutions that no stub and no report carries."""
    public = set()
    for path in (stage.repo / "exercises").rglob("*.py"):
        public |= {line.strip() for line in path.read_text().splitlines()}
    lines = set()
    sources = list((stage.repo / "tests" / ASSIGNMENT).rglob("*.py")) + list((stage.repo / "solutions").rglob("*.py"))
    for path in sources:
        for line in path.read_text().splitlines():
            line = line.strip()
            if len(line) >= 30 and any(c.isalpha() for c in line) and line not in public and not line.startswith(("#", '"', "'")):
                lines.add(line)
    return sorted(lines)


def leaks(stage: Stage, text: str, hidden: list[str]) -> list[str]:
    """Secrets and hidden source lines that appear in ``text``."""
    found = [s for s in stage.secrets if s in text]
    found += [f"hidden line: {line}" for line in hidden if line in text]
    return found


def assert_sound(report: dict) -> None:
    """A report as the grader writes it: it follows the schema and holds no grader error."""
    jsonschema.validate(report, REPORT_SCHEMA)
    assert report["grader_errors"] == [], report["grader_errors"]
