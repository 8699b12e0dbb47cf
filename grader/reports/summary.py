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
import re

from grader.hygiene import clean, clean_report, shortened
from grader.model import Diagnosis, ExerciseResult, Report, TestResult
from grader.reports.common import code_block, lead, one_reason, side_by_side

# GitHub accepts up to 1 MiB per step; leave room for other steps' summaries.
SUMMARY_LIMIT = 256 * 1024
MESSAGE_CHARS = 2000
BLOCK_CHARS = 4000

STATUS_MARK = {"passed": "✅ passed", "failed": "❌ failed", "error": "⚠️ error", "timeout": "⏱️ timeout"}

_PUNCTUATION = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
# A line that begins so would be a heading, a quote, a list, a rule, a table row, code or a link definition.
_BLOCK_START = re.compile(r"[#>+\-*=|~`\[]|[0-9]{1,9}[.)](?=\s|$)")
_EMAIL = re.compile(r"[A-Za-z0-9._+\-]@[A-Za-z0-9_\-]")


def md(text: str, limit: int = MESSAGE_CHARS) -> str:
    """``text`` as inert inline Markdown that reads as written: one line, cut after a whole word,
    with only what GitHub's Markdown would take for markup where it stands escaped: HTML tags,
    entities and ``<...>`` autolinks (``&lt;``, ``&amp;``), table cells (``|``), code spans,
    link and image brackets (``](``, ``][``), emphasis and strikethrough runs that could open or
    close (not ``self_attention_v1`` or ``2 * 3``), bare URLs, ``www.`` and e-mail addresses,
    math (``$``), and a block marker at the start of the line. Dates, shapes, ``[0, 0]`` and
    ``x ** 0.5`` stay as they are."""
    text = shortened(" ".join(clean(text, limit + 1).split()), limit)  # no control or bidi character either
    out = []
    n = len(text)
    i = 0
    while i < n:
        ch = text[i]
        before = text[i - 1] if i else " "
        after = text[i + 1] if i + 1 < n else " "
        if ch in "*_~":  # a delimiter run: inert only where it can neither open nor close
            j = i
            while j < n and text[j] == ch:
                j += 1
            left, right = before, text[j] if j < n else " "
            inert = (left.isspace() and right.isspace()) or (ch == "_" and left.isalnum() and right.isalnum())
            out.append(text[i:j] if inert else ("\\" + ch) * (j - i))
            i = j
            continue
        if ch == "&":
            out.append("&amp;" if after.isalpha() or after == "#" else ch)
        elif ch == "<":
            out.append("&lt;" if after.isalpha() or after in "/!?" else ch)
        elif ch in "|`$":
            out.append("\\" + ch)
        elif ch == "\\":
            out.append("\\\\" if after in _PUNCTUATION or i + 1 == n else ch)
        elif ch in "([" and before == "]":  # [text](link), [text][ref]
            out.append("\\" + ch)
        elif ch == ":" and text.startswith("//", i + 1):  # a bare URL's scheme
            out.append("\\:")
        elif ch == "." and text[max(0, i - 3):i].lower() == "www" and not (i > 3 and text[i - 4].isalnum()):
            out.append("\\.")
        elif ch == "@" and _EMAIL.match(text, i - 1 if i else 0) and i:
            out.append("\\@")
        elif ch == "#" and before.isspace():  # a heading's closing sequence
            out.append("\\#")
        else:
            out.append(ch)
        i += 1
    escaped = "".join(out)
    if start := _BLOCK_START.match(escaped):
        if start.group(0)[0].isdigit():  # "1." or "1)": the marker is what follows the number
            return escaped[: start.end() - 1] + "\\" + escaped[start.end() - 1:]
        if not escaped.startswith("\\"):
            escaped = "\\" + escaped
    return escaped


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


# The tags the job summary's Markdown renders to (its own <pre> and <details> blocks included): a page
# rendered from it that holds any other tag, or an attribute but a cell's alignment, is not used.
PAGE_TAGS = frozenset("p h1 h2 h3 h4 h5 h6 table thead tbody tr th td pre details summary ul ol li blockquote "
                      "strong em code br hr".split())
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9]*)([^>]*)>")
PAGE_STYLE = ("body{font-family:sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}"
              "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;"
              "vertical-align:top}th{background:#f3f3f3}pre{background:#f6f8fa;padding:.6em;overflow-x:auto}"
              "blockquote{border-left:4px solid #ddd;margin:1em 0;padding:0 1em;color:#444}")


def page(markdown_text: str, title: str) -> str:
    """``markdown_text`` (a job summary, or FEEDBACK.md) as an HTML page a browser shows: rendered
    (markdown-it, CommonMark with tables) when the result holds only :data:`PAGE_TAGS` without
    attributes, else the text itself, escaped, in a ``<pre>``. Student text in it went through
    :func:`md` or :func:`pre` already; the check is a second wall, not the first."""
    body = ""
    try:
        from markdown_it import MarkdownIt

        rendered = MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown_text)
        if all(tag.group(2).lower() in PAGE_TAGS and tag.group(3).strip() in ("", "/", 'style="text-align:right"')
               for tag in _TAG.finditer(rendered)) and "<" not in _TAG.sub("", rendered):
            body = rendered
    except ImportError:
        pass
    body = body or "<pre>" + html.escape(markdown_text, quote=False) + "</pre>"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title, quote=True)}</title><style>{PAGE_STYLE}</style></head><body>\n"
            f"{body}</body></html>\n")


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
