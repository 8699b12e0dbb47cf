"""The terminal summary: a table per exercise, feedback under it, attention grids side by side."""

from __future__ import annotations

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from grader.hygiene import clean, clean_report
from grader.model import ExerciseResult, Feedback, Report

STATUS_STYLE = {"passed": "green", "failed": "red", "error": "magenta", "timeout": "yellow"}


def show(report: Report, *, quiet: bool = False, console: Console | None = None, note: str = "") -> None:
    """Print ``report``: every exercise with its tests and feedback, then the total."""
    console = console or Console(highlight=False)
    report, note = clean_report(report), clean(note)  # student text: no escape sequences, capped
    if not quiet:
        for exercise in report.exercises:
            console.print(exercise_table(exercise))
            for test in exercise.tests:
                if test.status != "passed" and test.feedback:
                    console.print(feedback_panel(test.name, test.feedback))
            if exercise.output:
                console.print(Panel(Text(exercise.output), title=f"{exercise.name}.py printed", border_style="dim"))
        for flag in report.flags:
            console.print(Text(f"flag: {flag}", style="yellow"))
        for error in report.grader_errors:
            console.print(Text(f"grader error: {error}", style="bold magenta"))
    console.print(Text(f"{report.assignment}: {report.score:g} / {report.max_score:g} points", style="bold"))
    if note:
        console.print(Text(note, style="italic"))


def exercise_table(exercise: ExerciseResult) -> Table:
    """One exercise: a row per test with its status, points and message."""
    title = f"{exercise.name}  {exercise.score:g}/{exercise.max_score:g}"
    if exercise.message:
        title += f" — {exercise.message}"
    table = Table(title=escape(title), title_justify="left", show_lines=False, expand=False)
    table.add_column("test")
    table.add_column("status")
    table.add_column("points", justify="right")
    table.add_column("what went wrong", overflow="fold", max_width=90)
    for test in exercise.tests:
        style = STATUS_STYLE.get(test.status, "")
        table.add_row(Text(test.name), Text(test.status, style=style), f"{test.score:g}/{test.max_score:g}", Text(test.message))
    return table


def feedback_panel(name: str, feedback: Feedback) -> Panel:
    """Feedback for one failing test: the hint, expected vs actual, and the grids if any."""
    parts = []
    if feedback.checked:
        parts.append(Text(f"checked: {feedback.checked}"))
    if feedback.hint:
        parts.append(Text(f"hint: {feedback.hint}", style="bold cyan"))
    if feedback.expected_grid and feedback.actual_grid:
        grids = Table.grid(padding=(0, 3))
        grids.add_row(Text("expected", style="bold"), Text("yours", style="bold"))
        grids.add_row(shaded(feedback.expected_grid), shaded(feedback.actual_grid))
        parts.append(grids)
    else:
        if feedback.expected:
            parts.append(Text(f"expected: {feedback.expected}"))
        if feedback.actual:
            parts.append(Text(f"yours:    {feedback.actual}"))
    return Panel(Group(*parts), title=Text(name), border_style="red", expand=False)


def shaded(grid: list[list[float]]) -> Text:
    """A matrix as cells shaded by value (0 light, 1 dark), each with its value."""
    text = Text()
    for row in grid:
        for value in row:
            level = max(0.0, min(1.0, value)) if value == value else 0.0
            blue = int(255 - 200 * level)
            style = f"{'white' if level > 0.5 else 'black'} on rgb({blue},{blue},255)"
            label = " nan " if value != value else f"{value:5.2f}"[:5]
            text.append(label, style=style)
        text.append("\n")
    text.rstrip()
    return text
