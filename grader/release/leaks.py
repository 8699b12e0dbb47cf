"""The release's last step: find everything in a built template that must not reach students.

:func:`scan` reads every file back: instructor folders, symbolic links, copies of hidden suite
files, solution or hidden-test markers, and solution lines (:func:`secret_lines`: the lines
inside the solution regions of ``solutions/`` and of the notebook sources in ``course/source/``),
notebooks cell by cell.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from grader.release import markers

# Top-level folders of the instructor repository that never go into a template.
INSTRUCTOR_FOLDERS = frozenset({"solutions", "tests", "samples", "course", "project_tests"})
# A solution line shorter than this (comment and spacing dropped) is too common to count.
MIN_SECRET_CHARS = 10


def code_part(line: str) -> str:
    """``line`` without its trailing comment, spaces collapsed (a ``#`` inside quotes is kept)."""
    quote = ""
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#":
            line = line[:index]
            break
    return " ".join(line.split())


def notebook_cells(text: str) -> list[tuple[str, list[str]]]:
    """(where, lines) of every cell's source and text output of a notebook's JSON."""
    try:
        cells = json.loads(text).get("cells", [])
    except (ValueError, AttributeError):
        return [("", text.splitlines())]
    found = []
    for index, cell in enumerate(cells if isinstance(cells, list) else []):
        source = cell.get("source", "") if isinstance(cell, dict) else ""
        found.append((f"cell {index}", "".join(source).splitlines() if isinstance(source, list) else str(source).splitlines()))
        for output in cell.get("outputs", []) if isinstance(cell, dict) else []:
            for part in (output.get("text"), (output.get("data") or {}).get("text/plain")):
                if part:
                    found.append((f"cell {index} output", "".join(part).splitlines() if isinstance(part, list) else str(part).splitlines()))
    return found


def secret_lines(project_root: Path) -> dict[str, str]:
    """Every non-trivial line inside a solution region, normalised (:func:`code_part`), with its origin.

    From ``solutions/*/*.py`` and the notebook sources ``course/source/*/*.py`` (jupytext percent
    format: their exploration cells hold the same markers). A line that also appears outside the
    solution regions (the stubs and notebooks keep those) is not secret.
    """
    inside: dict[str, str] = {}
    public: set[str] = set()
    for path in sorted([*project_root.glob("solutions/*/*.py"), *project_root.glob("course/source/*/*.py")]):
        origin = path.relative_to(project_root).as_posix()
        secret, seen = markers.solution_regions(path.read_text().splitlines(), origin)
        public.update(code_part(line) for line in seen)
        for line in secret:
            key = code_part(line)
            if len(key) >= MIN_SECRET_CHARS and any(c.isalnum() for c in key):
                inside.setdefault(key, origin)
    return {key: origin for key, origin in inside.items() if key not in public}


def hidden_files(project_root: Path) -> dict[str, str]:
    """``{sha256: path}`` of every file of every hidden suite (``tests/``), tiny files aside."""
    found = {}
    for path in sorted((project_root / "tests").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and len(path.read_bytes().strip()) >= 20:
            found.setdefault(hashlib.sha256(path.read_bytes()).hexdigest(), path.relative_to(project_root).as_posix())
    return found


def scan(out: Path, project_root: Path) -> list[str]:
    """Everything in ``out`` that must not reach students, one sentence each ([] when clean).

    Looks for: instructor folders (``solutions/``, ``tests/``, ...), symbolic links, copies of
    hidden suite files, solution or hidden-test markers, and solution lines (:func:`secret_lines`)
    in any text file, notebooks cell by cell.
    """
    secrets = secret_lines(project_root)
    hidden = hidden_files(project_root)
    problems = []
    for dirpath, dirnames, filenames in os.walk(out):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for name in sorted(filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]):
            path = Path(dirpath) / name
            relative = path.relative_to(out).as_posix()
            if relative.split("/", 1)[0] in INSTRUCTOR_FOLDERS:
                problems.append(f"{relative}: the instructor folder {relative.split('/', 1)[0]}/ is in the template")
            if path.is_symlink():
                problems.append(f"{relative}: a symbolic link")
                continue
            data = path.read_bytes()
            if origin := hidden.get(hashlib.sha256(data).hexdigest()):
                problems.append(f"{relative}: a copy of the hidden suite file {origin}")
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
            problems += [f"{relative}: contains the marker {m!r}" for m in markers.ALL if m in text]
            parts = notebook_cells(text) if name.endswith(".ipynb") else [("", text.splitlines())]
            for where, lines in parts:
                for number, line in enumerate(lines, start=1):
                    if origin := secrets.get(code_part(line)):
                        at = f"{where}, line {number}" if where else f"line {number}"
                        problems.append(f"{relative} ({at}): a solution line from {origin}: {line.strip()[:100]}")
    return problems
