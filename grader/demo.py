"""``python -m grader demo``: grade the reference solutions and a bundled sample submission.

The sample is made from the solutions with the typical mistakes listed in
``samples/<assignment>.toml``, so the demo shows full marks next to actionable feedback.
"""

from __future__ import annotations

import tempfile
import tomllib
from pathlib import Path

from grader.assignment import Assignment
from grader.settings import Settings
from grader.release.stubs import make_stub


def sample_mistakes(assignment: Assignment) -> list[dict]:
    """The typical mistakes of ``samples/<assignment>.toml`` (none when there is no sample)."""
    return tomllib.loads(assignment.sample.read_text())["mistakes"] if assignment.sample.exists() else []


def build_submission(folder: Path, assignment: Assignment, mistakes: list[dict]) -> Path:
    """A submission folder with the solutions, each listed mistake applied."""
    target = folder / "exercises" / assignment.name
    target.mkdir(parents=True)
    sources = {p.stem: p.read_text() for p in assignment.solutions.glob("*.py")}
    for mistake in mistakes:
        module = mistake["module"]
        if mistake.get("stub"):
            sources[module] = make_stub(sources[module])
        for old, new in mistake.get("replace", []):
            if sources[module].count(old) != 1:
                raise ValueError(f"sample mistake for {module}: {old!r} must occur exactly once")
            sources[module] = sources[module].replace(old, new)
    for stem, text in sources.items():
        (target / f"{stem}.py").write_text(text)
    return folder


def run(assignment: Assignment, settings: Settings) -> int:
    """Grade both submissions and print their tables."""
    from rich.console import Console
    from rich.text import Text

    from grader.batch.pool import grade_many
    from grader.reports import terminal

    mistakes = sample_mistakes(assignment)
    console = Console(highlight=False)
    with tempfile.TemporaryDirectory() as tmp:
        reference = build_submission(Path(tmp) / "reference", assignment, [])
        sample = build_submission(Path(tmp) / "sample", assignment, mistakes)
        reports = dict(grade_many([reference, sample], assignment, settings))
    console.rule(f"The reference solutions ({assignment.name})")
    terminal.show(reports[reference], console=console, compact=True)
    console.rule("A sample submission with typical mistakes")
    console.print(Text("The sample is the reference solutions with these mistakes made on purpose:"))
    for mistake in mistakes:
        console.print(Text(f"  {mistake['module']}.py: {mistake['why']}"))
    console.print()
    terminal.show(reports[sample], console=console, compact=True)
    console.rule()
    console.print(Text(next_steps(assignment.name, settings)))
    return 0


def next_steps(assignment: str, settings: Settings) -> str:
    """The demo's closing line: what to try next."""
    others = sorted(p.name for p in (settings.project_root / "samples").glob("*.toml") if p.stem != assignment)
    other = f"the other assignment: .venv/bin/python -m grader demo --assignment {Path(others[0]).stem}; " if others else ""
    return (f"Try next: {other}grade a folder of your own: .venv/bin/python -m grader grade FOLDER --assignment "
            f"{assignment}; release the student template and grade a class: README.md, 'The instructor's path'.")
