"""The terminal summary: per exercise, its diagnosis on top, then its checks in one table.

Attention grids are drawn with block shades and values (:mod:`grader.reports.common`), so they
read in a 16-colour terminal too; in GitHub Actions colour is forced (the log shows it).
"""

from __future__ import annotations

from rich.console import Console, Group
from rich.markup import escape
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from grader.hygiene import clean, clean_report
from grader.model import Diagnosis, ExerciseResult, Report
from grader.reports.classroom import in_actions
from grader.reports.common import cell, code_block, lead, level, one_reason

STATUS_STYLE = {"passed": "green", "failed": "red", "error": "magenta", "timeout": "yellow"}


def show(report: Report, *, quiet: bool = False, console: Console | None = None, note: str = "",
         public: bool = False, compact: bool = False, only: list[str] | None = None) -> None:
    """Print ``report``: a passed module and a module not started one line each, a failing module
    its diagnosis and failing checks, then the total (for the ``public`` checks, how many passed:
    their points are not the grade). ``compact`` (the demo) gives a failing module's checks as
    wrapped lines, not a table. ``only`` names the modules to show (and count in the total)."""
    console = console or Console(highlight=False, force_terminal=True if in_actions() else None)
    report, note = clean_report(report), clean(note)  # student text: no escape sequences, capped
    exercises = [e for e in report.exercises if only is None or e.name in only]
    if not quiet:
        for exercise in exercises:
            if (line := one_line(exercise)) is not None:
                console.print(line)
                continue
            if exercise.diagnosis:
                console.print(diagnosis_panel(exercise.name, exercise.diagnosis))
            if reason := one_reason(exercise):  # one line, not the same message in a row per check
                console.print(reason_line(exercise, reason))
            else:
                console.print(failing_lines(exercise) if compact else exercise_table(exercise))
            concepts = exercise.diagnosis.concepts if exercise.diagnosis else []
            hints = dict.fromkeys(t.feedback.hint for t in exercise.tests if t.status != "passed" and t.feedback and t.feedback.hint)
            for hint in [h for h in hints if h not in concepts][:3]:
                console.print(Padding(Text(hint, style="cyan"), (0, 0, 0, 2)))
            if exercise.output:
                console.print(Panel(Text(exercise.output), title=f"{exercise.name}.py printed", border_style="dim"))
        for flag in report.flags:
            console.print(Text(f"flag: {flag}", style="yellow"))
        for error in report.grader_errors:
            console.print(Text(f"grader error: {error}", style="bold magenta"))
    which = report.assignment + (f" ({', '.join(f'{name}.py' for name in only)} only)" if only is not None else "")
    if public:
        tests = [t for e in exercises for t in e.tests]
        passed = sum(t.status == "passed" for t in tests)
        console.print(Text(f"{which}: public checks: {passed}/{len(tests)} passed", style="bold"))
    elif only is not None:
        score, max_score = sum(e.score for e in exercises), sum(e.max_score for e in exercises)
        console.print(Text(f"{which}: {score:g} / {max_score:g} points", style="bold"))
    else:
        console.print(Text(f"{report.assignment}: {report.score:g} / {report.max_score:g} points", style="bold"))
    if note:
        console.print(Text(note, style="italic"))


def one_line(exercise: ExerciseResult) -> Text | None:
    """A passed module, or one not started, in one line (None for any other)."""
    count = len(exercise.tests)
    points = f"{exercise.score:g}/{exercise.max_score:g}"
    if exercise.tests and all(t.status == "passed" for t in exercise.tests):
        return Text(f"✓ {exercise.name}  {points}: all {count} checks passed", style="green")
    if exercise.not_attempted:
        return Text(f"· {exercise.name}  {points}: not started yet ({count} checks)", style="yellow")
    return None


def reason_line(exercise: ExerciseResult, reason: str) -> Text:
    """A module whose checks all failed for one reason: that reason once (said by its diagnosis above, when it has one)."""
    count = len(exercise.tests)
    said = f"none of its {count} checks passed (see above)" if exercise.diagnosis else f"{reason} ({count} checks)"
    return Text(f"✗ {exercise.name}  {exercise.score:g}/{exercise.max_score:g}: {said}", style="bold red")


def failing_lines(exercise: ExerciseResult) -> Group:
    """A failing module: its total, then each check that did not pass with its whole message
    (lines wrap at spaces; nothing is cut)."""
    failing = [t for t in exercise.tests if t.status != "passed"]
    head = f"✗ {exercise.name}  {exercise.score:g}/{exercise.max_score:g}: {len(failing)} of {len(exercise.tests)} checks did not pass"
    if exercise.message:
        head += f" ({exercise.message})"
    lines = [Text(head, style="bold red")]
    for test in failing:
        line = Text("  • ")
        line.append(test.name, style="bold")
        line.append(f"  {test.status}", style=STATUS_STYLE.get(test.status, ""))
        line.append(f"  {test.score:g}/{test.max_score:g}")
        lines.append(line)
        if test.message:
            lines.append(Padding(Text(test.message), (0, 0, 0, 6)))
    return Group(*lines)


def exercise_table(exercise: ExerciseResult) -> Table:
    """One exercise: a row per check that did not pass (every check when all passed)."""
    title = f"{exercise.name}  {exercise.score:g}/{exercise.max_score:g}"
    if exercise.message:
        title += f" — {exercise.message}"
    failing = [t for t in exercise.tests if t.status != "passed"]
    shown = failing or exercise.tests
    passed = len(exercise.tests) - len(failing)
    caption = f"{passed} other check{'s' if passed != 1 else ''} passed" if failing and passed else None
    table = Table(title=escape(title), title_justify="left", caption=caption, caption_justify="left",
                  show_lines=False, expand=False)
    table.add_column("check", overflow="fold")  # a long name (a case's id) wraps, never cut short
    table.add_column("status")
    table.add_column("points", justify="right")
    table.add_column("what went wrong", overflow="fold", max_width=90)
    for test in shown:
        style = STATUS_STYLE.get(test.status, "")
        table.add_row(Text(test.name), Text(test.status, style=style), f"{test.score:g}/{test.max_score:g}", Text(test.message))
    return table


def diagnosis_panel(name: str, diagnosis: Diagnosis) -> Panel:
    """A module's diagnosis: the confirmed concepts, else the first step that differs (with
    both values, as grids for attention matrices), or the exception explained."""
    parts: list = [Text(line, style="bold cyan" if line.startswith("Mistake found") else "") for line in lead(diagnosis)]
    if block := code_block(diagnosis):
        parts.append(Text("\n".join(block), style="bold", no_wrap=True, overflow="ellipsis"))
    if diagnosis.expected_grid and diagnosis.actual_grid:
        grids = Table.grid(padding=(0, 3))
        grids.add_row(Text("expected", style="bold"), Text("yours", style="bold"))
        grids.add_row(shaded(diagnosis.expected_grid), shaded(diagnosis.actual_grid))
        parts.append(grids)
    elif diagnosis.expected or diagnosis.actual:
        parts.append(Text(f"expected: {diagnosis.expected}\nyours:    {diagnosis.actual}"))
    return Panel(Group(*parts), title=Text(f"{name}.py: what to fix first"), border_style="red", expand=False)


LEVEL_STYLE = {-1: "dim", 0: "blue", 1: "cyan", 2: "bold cyan", 3: "bold white"}


def shaded(grid: list[list[float]]) -> Text:
    """A matrix as cells with a block shade and the value (see grader.reports.common)."""
    text = Text()
    for row in grid[:16]:
        for value in (row if isinstance(row, list) else [row])[:16]:
            text.append(cell(value), style=LEVEL_STYLE[level(value)])
        text.append("\n")
    text.rstrip()
    return text
