"""Build submissions and grade them through the real command line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from grader.release.stubs import make_stub

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def solution_sources(assignment: str) -> dict[str, str]:
    """The reference solution of every module of ``assignment``, by stem."""
    return {p.stem: p.read_text() for p in sorted((ROOT / "solutions" / assignment).glob("*.py"))}


def stub_sources(assignment: str) -> dict[str, str]:
    """The generated stub of every module of ``assignment``, by stem."""
    return {stem: make_stub(text) for stem, text in solution_sources(assignment).items()}


def make_submission(folder: Path, assignment: str, overrides: dict[str, str | None] | None = None) -> Path:
    """A submission with the reference solutions, except ``overrides`` (None: file left out)."""
    sources = {**solution_sources(assignment), **(overrides or {})}
    target = folder / "exercises" / assignment
    target.mkdir(parents=True, exist_ok=True)
    for stem, text in sources.items():
        if text is not None:
            (target / f"{stem}.py").write_text(text)
    return folder


def mutate(source: str, old: str, new: str) -> str:
    """Replace the single occurrence of ``old`` in ``source``."""
    assert source.count(old) == 1, f"mutation target must occur exactly once: {old!r}"
    return source.replace(old, new)


def grade_cli(root: Path, assignment: str, *extra: str, env: dict | None = None, timeout: float = 300):
    """Run ``python -m grader grade``; return the finished process and the parsed report."""
    report_path = root.parent / f"{root.name}-report.json"
    proc = subprocess.run(
        [PYTHON, "-m", "grader", "grade", str(root), "--assignment", assignment, "--json", str(report_path), *extra],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})},
    )
    report = json.loads(report_path.read_text()) if report_path.exists() else None
    return proc, report


def grade_many(roots: list[Path], assignment: str, *extra: str, timeout: float = 900) -> dict[Path, dict]:
    """Grade many submissions in one run (one sandbox, like the bulk regrade); reports by root."""
    script = (
        "import json, sys; from pathlib import Path; from grader.batch.pool import grade_many; from grader.assignment import Assignment; "
        "from grader.cli import build_parser, settings_from; "
        "args = build_parser().parse_args(['grade', '.', '--assignment', sys.argv[1], *sys.argv[3:]]); "
        "roots = [Path(p) for p in json.loads(sys.argv[2])]; settings = settings_from(args); "
        "print(json.dumps({str(r): rep.to_dict() for r, rep in grade_many(roots, Assignment.resolve(sys.argv[1], settings), settings)}))"
    )
    proc = subprocess.run(
        [PYTHON, "-c", script, assignment, json.dumps([str(r) for r in roots]), *extra],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {Path(k): v for k, v in json.loads(proc.stdout.splitlines()[-1]).items()}


def exercise(report: dict, name: str) -> dict:
    """The exercise called ``name`` in a report."""
    return next(e for e in report["exercises"] if e["name"] == name)


def assignments() -> list[str]:
    """Every assignment that has a hidden suite."""
    return sorted(p.parent.name for p in (ROOT / "tests").glob("*/rubric.toml"))


def copy_repository(target: Path) -> Path:
    """The repository's files as a clone has them (tracked and not ignored; no .venv), in ``target``."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for relative in filter(None, listed):
        source = ROOT / relative
        if source.is_file() and not source.is_symlink():
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / relative)
    return target
