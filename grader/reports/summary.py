"""The Markdown job summary (``$GITHUB_STEP_SUMMARY``): where students read their feedback.

The reporter action prints no failure message except for tests in error, so the summary
carries everything: the total, a table per exercise, and for each failing test what was
checked, the hint, expected and actual values. Every piece of text that may come from a
student (exception messages, printed output, file names in flags, values) is escaped:
inline text with :func:`md`, blocks with :func:`pre`, so it can neither format the page nor
inject HTML.
"""

from __future__ import annotations

import html

from grader.hygiene import clean_report
from grader.model import ExerciseResult, Feedback, Report, TestResult

# GitHub accepts up to 1 MiB per step; leave room for other steps' summaries.
SUMMARY_LIMIT = 256 * 1024
MESSAGE_CHARS = 2000
BLOCK_CHARS = 4000

# Characters with a meaning in GitHub Markdown (and its math and autolinks) at inline level.
_MARKDOWN = set("\\`*_{}[]()#+-.!|~<>&@:$^=\"'")
STATUS_MARK = {"passed": "✅ passed", "failed": "❌ failed", "error": "⚠️ error", "timeout": "⏱️ timeout"}


def md(text: str, limit: int = MESSAGE_CHARS) -> str:
    """``text`` as inert inline Markdown: one line, punctuation escaped, HTML made entities."""
    text = " ".join(str(text).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    out = []
    for ch in text:
        if ch == "&":
            out.append("&amp;")
        elif ch == "<":
            out.append("&lt;")
        elif ch == ">":
            out.append("&gt;")
        elif ch in _MARKDOWN:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def pre(text: str, limit: int = BLOCK_CHARS) -> str:
    """``text`` as a preformatted HTML block (no Markdown inside, HTML escaped)."""
    text = str(text)
    if len(text) > limit:
        text = text[:limit] + "\n… (cut)"
    return "<pre>" + html.escape(text, quote=False) + "</pre>"


def markdown(report: Report) -> str:
    """The whole job summary for ``report``."""
    report = clean_report(report)  # student text: valid UTF-8, no control characters, capped
    lines = [f"## {md(report.assignment)}: {report.score:g} / {report.max_score:g} points", ""]
    lines += exercise_table(report.exercises)
    failing = [e for e in report.exercises if any(t.status != "passed" for t in e.tests)]
    if failing:
        lines += ["", "### What to fix", ""]
        for exercise in failing:
            lines += exercise_feedback(exercise)
    printed = [e for e in report.exercises if e.output]
    for exercise in printed:
        lines += ["", f"<details><summary>What {md(exercise.name)}.py printed</summary>", "", pre(exercise.output), "", "</details>"]
    if report.flags:
        lines += ["", "### Files the grader ignored", ""]
        lines += [f"- {md(flag, 300)}" for flag in report.flags[:50]]
        if len(report.flags) > 50:
            lines.append(f"- … and {len(report.flags) - 50} more")
    if report.grader_errors:
        lines += ["", f"> The grader itself failed on {len(report.grader_errors)} check(s); this is not your fault. "
                      "Please tell your instructor."]
    text = "\n".join(lines) + "\n"
    if len(text) > SUMMARY_LIMIT:
        text = text[:SUMMARY_LIMIT].rsplit("\n", 1)[0] + "\n\n(feedback cut: too long for the job summary; see the log)\n"
        text = _close_open_blocks(text)
    return text + "\n"


def exercise_table(exercises: list[ExerciseResult]) -> list[str]:
    """One row per exercise: points, and how many checks passed or why none did."""
    rows = ["| exercise | points | checks passed | note |", "|---|---:|---:|---|"]
    for e in exercises:
        passed = sum(t.status == "passed" for t in e.tests)
        mark = "✅" if e.tests and passed == len(e.tests) else ("❌" if passed == 0 else "🟡")
        rows.append(f"| {mark} {md(e.name)} | {e.score:g} / {e.max_score:g} | {passed} / {len(e.tests)} | {md(e.message, 300)} |")
    return rows


def exercise_feedback(exercise: ExerciseResult) -> list[str]:
    """Feedback for the failing tests of one exercise (one line when a single reason sank it)."""
    lines = [f"#### {md(exercise.name)}.py — {exercise.score:g} / {exercise.max_score:g}", ""]
    failing = [t for t in exercise.tests if t.status != "passed"]
    if exercise.message and len({t.message for t in failing}) <= 1 and not any(t.feedback for t in failing):
        return lines + [f"{md(exercise.message)} ({len(failing)} checks)", ""]
    for test in failing:
        lines += test_feedback(test)
    return lines + [""]


def test_feedback(test: TestResult) -> list[str]:
    """A bullet for one failing test, its feedback under it; values in a block after the list
    item (an HTML block cannot stay inside a list item over several lines)."""
    lines = [f"- **{md(test.name, 200)}** ({STATUS_MARK.get(test.status, md(test.status))}): {md(test.message)}"]
    feedback = test.feedback or Feedback()
    if feedback.checked:
        lines.append(f"  - checked: {md(feedback.checked)}")
    if feedback.hint:
        lines.append(f"  - hint: {md(feedback.hint)}")
    if feedback.expected_grid and feedback.actual_grid:
        block = "expected:\n" + grid_text(feedback.expected_grid) + "\n\nyours:\n" + grid_text(feedback.actual_grid)
        lines += ["", pre(block), ""]
    elif feedback.expected or feedback.actual:
        block = f"expected: {feedback.expected}\nyours:    {feedback.actual}"
        lines += ["", pre(block), ""]
    return lines


def grid_text(grid: list) -> str:
    """A matrix as aligned text rows, four decimals."""
    rows = []
    for row in grid[:32]:
        cells = row if isinstance(row, list) else [row]
        rows.append(" ".join(_cell(v) for v in cells[:32]))
    return "\n".join(rows)


def _cell(value) -> str:
    if isinstance(value, (int, float)):
        return f"{value:8.4f}"
    return f"{str(value)[:8]:>8}"


def _close_open_blocks(text: str) -> str:
    """After cutting, close a ``<pre>`` or ``<details>`` left open."""
    if text.count("<pre>") > text.count("</pre>"):
        text += "</pre>\n"
    if text.count("<details>") > text.count("</details>"):
        text += "</details>\n"
    return text
