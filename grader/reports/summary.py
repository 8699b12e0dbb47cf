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

from grader.hygiene import clean_report, shortened
from grader.model import Diagnosis, ExerciseResult, Report, TestResult
from grader.reports.common import code_block, lead, one_reason, side_by_side

# GitHub accepts up to 1 MiB per step; leave room for other steps' summaries.
SUMMARY_LIMIT = 256 * 1024
MESSAGE_CHARS = 2000
BLOCK_CHARS = 4000

# Characters with a meaning in GitHub Markdown (and its math and autolinks) at inline level.
_MARKDOWN = set("\\`*_{}[]()#+-.!|~<>&@:$^=\"'")
STATUS_MARK = {"passed": "✅ passed", "failed": "❌ failed", "error": "⚠️ error", "timeout": "⏱️ timeout"}


def md(text: str, limit: int = MESSAGE_CHARS) -> str:
    """``text`` as inert inline Markdown: one line, punctuation escaped, HTML made entities."""
    text = shortened(" ".join(str(text).split()), limit)
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
    """One exercise: its diagnosis on top, then the failing checks in one compact list, then
    what was observed about the code's structure (each hint once)."""
    lines = [f"#### {md(exercise.name)}.py — {exercise.score:g} / {exercise.max_score:g}", ""]
    failing = [t for t in exercise.tests if t.status != "passed"]
    if exercise.message and exercise.diagnosis is None and not any(t.feedback and t.feedback.hint for t in failing):
        return lines + [f"{md(exercise.message)} ({len(failing)} checks)", ""]
    if exercise.diagnosis is not None and one_reason(exercise):  # said once, by the diagnosis
        return lines + diagnosis_block(exercise.diagnosis) + [f"None of its {len(failing)} checks passed.", ""]
    if exercise.diagnosis is not None:  # the box first, then each check's own message (it may say more)
        lines += diagnosis_block(exercise.diagnosis)
    lines += [f"Checks that did not pass ({len(failing)}):", ""] + [test_line(test) for test in failing]
    hints = list(dict.fromkeys(t.feedback.hint for t in failing if t.feedback and t.feedback.hint))
    concepts = exercise.diagnosis.concepts if exercise.diagnosis else []
    lines += [""] + [f"> {md(hint, 400)}" for hint in hints if hint not in concepts][:3]
    return lines + [""]


def diagnosis_block(diagnosis: Diagnosis) -> list[str]:
    """The diagnosis: its words as a quote, then the values (shaded grids) in one block."""
    lines = [f"> {'**' + md(line) + '**' if line.startswith('Mistake found') else md(line)}  " for line in lead(diagnosis)]
    lines.append("")
    if block := code_block(diagnosis):
        lines += [pre("\n".join(block)), ""]
    if diagnosis.expected_grid and diagnosis.actual_grid:
        lines += [pre("\n".join(side_by_side(diagnosis.expected_grid, diagnosis.actual_grid))), ""]
    elif diagnosis.expected or diagnosis.actual:
        lines += [pre(f"expected: {diagnosis.expected}\nyours:    {diagnosis.actual}"), ""]
    return lines


def test_line(test: TestResult) -> str:
    """A failing check in one bullet: name, status, its whole message (expected and got included)."""
    return f"- {md(test.name, 200)} ({STATUS_MARK.get(test.status, md(test.status))}): {md(test.message)}"


def _close_open_blocks(text: str) -> str:
    """After cutting, close a ``<pre>`` or ``<details>`` left open."""
    if text.count("<pre>") > text.count("</pre>"):
        text += "</pre>\n"
    if text.count("<details>") > text.count("</details>"):
        text += "</details>\n"
    return text
