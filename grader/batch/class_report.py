"""The class report ``batch`` writes beside its CSV, and a feedback file per student.

For ``grades.csv`` it writes ``grades-report.html`` and ``grades-report.md`` (the same content),
with two pictures beside them (``grades-scores.svg``, the distribution of totals, and
``grades-exercises.svg``, each exercise's mean and zero count; :mod:`grader.batch.charts`):
per exercise the mean, median and number of zeros; the diagnosed mistakes ranked by
how many students made them, with who; the students whose submission was flagged, had a module
that could not be graded (missing, a syntax error, ...) or was not graded at all; and every
student's total with a link to their feedback. The feedback file, ``FEEDBACK.md`` beside the
student's REPORT.json, is their job summary (:func:`grader.reports.summary.markdown`) under a
heading that names them and the commit graded: plain Markdown, readable as text; ``FEEDBACK.html``
beside it is the same as a page (:func:`grader.reports.summary.page`). The HTML report links to
the page, the Markdown report to the Markdown.

Everything a student controls (folder names, logins, messages, flags) is escaped: HTML-escaped
in the page, made inert Markdown (:func:`grader.reports.summary.md`) in the Markdown, and links
are percent-encoded relative paths.
"""

from __future__ import annotations

import html
import os
import statistics
import urllib.parse
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from grader.batch import charts
from grader.hygiene import NAME, clean
from grader.batch.student import Student
from grader.reports import replace_atomically
from grader.reports.summary import markdown as job_summary
from grader.reports.summary import md
from grader.reports.summary import page as feedback_page

FEEDBACK = "FEEDBACK.md"


@dataclass
class Pages:
    """What :func:`write` wrote."""

    html: Path
    markdown: Path
    pictures: list[Path]


@dataclass
class ExerciseStats:
    name: str
    max_score: float
    mean: float
    median: float
    zeros: int


def exercise_stats(rubric, students: list[Student]) -> list[ExerciseStats]:
    """Mean, median and number of zeros of each exercise over the students graded."""
    graded = [s for s in students if not s.skipped]
    stats = []
    for exercise in rubric.exercises:
        scores = [next((e.score for e in s.report.exercises if e.name == exercise.name), 0.0) for s in graded]
        stats.append(ExerciseStats(exercise.name, exercise.max_score, statistics.fmean(scores) if scores else 0.0,
                                   statistics.median(scores) if scores else 0.0, sum(score == 0 for score in scores)))
    return stats


def mistakes(students: list[Student]) -> list[tuple[str, str, list[str]]]:
    """``(exercise, confirmed concept, students)`` ranked by how many students made it."""
    seen: dict[tuple[str, str], list[str]] = defaultdict(list)
    for student in students:
        for exercise in student.report.exercises:
            for concept in (exercise.diagnosis.concepts if exercise.diagnosis else []):
                who = seen[(exercise.name, concept)]
                if student.name not in who:
                    who.append(student.name)
    return sorted(((e, c, who) for (e, c), who in seen.items()), key=lambda item: (-len(item[2]), item[0], item[1]))


def attention(students: list[Student]) -> list[tuple[str, str, str]]:
    """``(student, what, detail)`` for every student to look at: not graded, grader errors,
    modules that could not be graded, flags."""
    rows = []
    for s in students:
        if s.skipped:
            rows.append((s.name, "not graded", "; ".join(filter(None, [s.skip_reason, after_deadline(s.source)]))))
            continue
        if s.source.get("commits_after_deadline"):
            rows.append((s.name, "commits after the deadline", after_deadline(s.source)))
        if s.report.isolation and s.report.isolation != "namespaces":
            rows.append((s.name, "graded with weak isolation", s.report.isolation))
        for error in s.report.grader_errors[:3]:
            rows.append((s.name, "grader error (not a grade)", error.splitlines()[0] if error else ""))
        for exercise in s.report.exercises:
            if exercise.message and not exercise.not_attempted:
                rows.append((s.name, f"{exercise.name} not graded", exercise.message))
        for flag in s.report.flags[:10]:
            rows.append((s.name, "flagged", flag))
    return rows


def after_deadline(source: dict[str, str]) -> str:
    """How many commits a repository holds after the deadline and when the newest was made ("" when none)."""
    count = int(source.get("commits_after_deadline") or 0)
    if not count:
        return ""
    return (f"{count} commit{'s' if count != 1 else ''} after the deadline (the latest committed "
            f"{source.get('last_commit_after_deadline', '')}): the work at the deadline is what counts")


def isolation_summary(students: list[Student]) -> str:
    """How student code was confined over the class, in one sentence."""
    modes = sorted({s.report.isolation for s in students if s.report.isolation})
    if not modes:
        return "no student code ran"
    if modes == ["namespaces"]:
        return "student code ran fully isolated (namespaces)"
    return "student code ran with WEAK isolation for some or all students (" + "; ".join(modes) + "): not a grade of record"


def write_feedback(student: Student, reports_dir: Path) -> Path:
    """``FEEDBACK.md`` for one student: their job summary under a heading naming them and the commit."""
    lines = [f"# Feedback for {md(clean(student.name, NAME))}", ""]
    if student.source.get("commit") and student.source.get("committed_at") and not student.skipped:
        lines += [f"Graded at commit `{md(student.source['commit'][:12])}` "
                  f"(committed {md(student.source['committed_at'])}), the last one at or before the deadline.", ""]
    later = ""
    if count := int(student.source.get("commits_after_deadline") or 0):
        later = (f"Your repository has {count} commit{'s' if count != 1 else ''} after the deadline (the latest "
                 f"committed {md(student.source.get('last_commit_after_deadline', ''))}): "
                 f"{'they were' if count != 1 else 'it was'} not graded.")
    path = reports_dir / student.folder.name / FEEDBACK
    if student.skipped:  # nothing was graded: the reason is all there is to say
        lines += [f"Not graded: {md(student.skip_reason)}.", ""] + ([later, ""] if later else [])
        text = "\n".join(lines)
    else:
        if later:
            lines += [later + " This grade is your work as it stood at the deadline.", ""]
        text = "\n".join(lines) + "\n" + job_summary(student.report)
    replace_atomically(path, text)
    replace_atomically(path.with_suffix(".html"), feedback_page(text, f"Feedback for {clean(student.name, NAME)}"))
    return path


def draw(stem: Path, rubric, students: list[Student], stats: list[ExerciseStats]) -> list[Path]:
    """The two pictures (SVG, :mod:`grader.batch.charts`) beside the page."""
    graded = [s.report.score for s in students if not s.skipped]
    scores = stem.with_name(f"{stem.name}-scores.svg")
    replace_atomically(scores, charts.histogram(graded, max(rubric.max_score, 1.0), title=f"Score distribution ({len(graded)} graded)",
                                                xlabel=f"total score (out of {rubric.max_score:g})"))
    exercises = stem.with_name(f"{stem.name}-exercises.svg")
    rows = [(s.name, 100 * s.mean / s.max_score if s.max_score else 0.0, f"mean {s.mean:.3g}/{s.max_score:g}, {s.zeros} at zero")
            for s in stats]
    replace_atomically(exercises, charts.bars(rows, title="Per exercise", xlabel="mean score, % of the exercise's points"))
    return [scores, exercises]


def link(target: Path, base: Path) -> str:
    """A relative, percent-encoded link from ``base``'s folder to ``target`` (names are hostile)."""
    return urllib.parse.quote(os.path.relpath(target, base).replace(os.sep, "/"), safe="/")


@dataclass
class StudentRow:
    """A student's line of the report's last table, as text, the same in both formats."""

    name: str
    score: str  # "3 / 40", or "not graded"
    folder: str
    commit: str  # shortened
    committed: str
    commits_after_deadline: str
    feedback: Path  # their FEEDBACK.md (the page links to the .html beside it)

    @classmethod
    def of(cls, s: Student) -> StudentRow:
        """``s``'s line."""
        score = "not graded" if s.skipped else f"{s.report.score:g} / {s.report.max_score:g}"
        return cls(s.name, score, s.folder.name, short(s.source.get("commit", "")), s.source.get("committed_at", ""),
                   s.source.get("commits_after_deadline", ""), s.feedback)


@dataclass
class ClassPage:
    """What the class report says, made once and written as HTML (:func:`page_html`) and as Markdown
    (:func:`page_markdown`)."""

    title: str
    summary: str  # the class in one sentence: how many graded, the mean and median, the isolation
    stats: list[ExerciseStats]
    ranked: list[tuple[str, str, list[str]]]  # (exercise, mistake, who), most common first
    notes: list[tuple[str, str, str]]  # (student, what, detail) to look at
    students: list[StudentRow]
    pictures: list[Path]
    base: Path  # the pages' folder: links are relative to it


def write(csv_path: Path, assignment: str, rubric, students: list[Student]) -> Pages:
    """The pictures, the HTML page and its Markdown version (see the module docstring), linking to
    each student's feedback file (``batch`` writes each with :func:`write_feedback` as the
    student's grade is known)."""
    stem = csv_path.with_suffix("")
    stats = exercise_stats(rubric, students)
    graded = [s.report.score for s in students if not s.skipped]
    summary = (f"{len(students)} students, {len(graded)} graded; total out of {rubric.max_score:g}: "
               + (f"mean {statistics.fmean(graded):.3g}, median {statistics.median(graded):g}" if graded else "no grades")
               + "; " + isolation_summary(students))
    page = ClassPage(f"{assignment}: the class at a glance", summary, stats, mistakes(students), attention(students),
                     [StudentRow.of(s) for s in students], draw(stem, rubric, students, stats), csv_path.parent)
    html_path = stem.with_name(f"{stem.name}-report.html")
    md_path = stem.with_name(f"{stem.name}-report.md")
    replace_atomically(html_path, page_html(page))
    replace_atomically(md_path, page_markdown(page))
    return Pages(html_path, md_path, page.pictures)


def short(commit: str) -> str:
    """A commit id shortened to 12 characters; other text (why there is none) whole."""
    return commit[:12] if len(commit) == 40 and all(c in "0123456789abcdef" for c in commit) else commit


def _who(names: list[str]) -> str:
    return ", ".join(names)


def page_html(page: ClassPage) -> str:
    """The class report as one HTML page (every student text escaped)."""
    e = lambda text: html.escape(clean(text), quote=True)  # noqa: E731
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{e(page.title)}</title>",
           "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
           "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;"
           "vertical-align:top;overflow-wrap:anywhere;max-width:40em}th{background:#f3f3f3}td.n{text-align:right}img{max-width:100%;display:block;margin:1em 0}"
           "</style></head><body>", f"<h1>{e(page.title)}</h1>", f"<p>{e(page.summary)}</p>"]
    out += [f'<img src="{html.escape(link(p, page.base))}" alt="{e(p.stem)}">' for p in page.pictures]
    out += ["<h2>Per exercise</h2>", "<table><tr><th>exercise</th><th>points</th><th>mean</th><th>median</th>"
            "<th>students at zero</th></tr>"]
    out += [f'<tr><td>{e(s.name)}</td><td class="n">{s.max_score:g}</td><td class="n">{s.mean:.3g}</td>'
            f'<td class="n">{s.median:g}</td><td class="n">{s.zeros}</td></tr>' for s in page.stats]
    out.append("</table><h2>Diagnosed mistakes, most common first</h2>")
    if page.ranked:
        out.append("<table><tr><th>students</th><th>exercise</th><th>mistake</th><th>who</th></tr>")
        out += [f'<tr><td class="n">{len(who)}</td><td>{e(ex)}</td><td>{e(concept)}</td><td>{e(_who(who))}</td></tr>'
                for ex, concept, who in page.ranked]
        out.append("</table>")
    else:
        out.append("<p>No confirmed mistake.</p>")
    out.append("<h2>To look at: not graded, flagged, modules that could not be graded</h2>")
    if page.notes:
        out.append("<table><tr><th>student</th><th>what</th><th>detail</th></tr>")
        out += [f"<tr><td>{e(who)}</td><td>{e(what)}</td><td>{e(detail)}</td></tr>" for who, what, detail in page.notes]
        out.append("</table>")
    else:
        out.append("<p>Nothing: every submission was graded, none flagged.</p>")
    out += ["<h2>Students</h2>", "<table><tr><th>student</th><th>score</th><th>folder</th><th>commit</th>"
            "<th>committed</th><th>commits after the deadline</th><th>feedback</th></tr>"]
    for s in page.students:
        href = html.escape(link(s.feedback.with_suffix(".html"), page.base))  # the page beside FEEDBACK.md
        out.append(f'<tr><td>{e(s.name)}</td><td class="n">{s.score}</td><td>{e(s.folder)}</td>'
                   f'<td><code>{e(s.commit)}</code></td><td>{e(s.committed)}</td>'
                   f'<td class="n">{e(s.commits_after_deadline)}</td>'
                   f'<td><a href="{href}">feedback</a></td></tr>')
    out += ["</table>", "</body></html>", ""]
    return "\n".join(out)


def page_markdown(page: ClassPage) -> str:
    """The class report in Markdown (every student text made inert)."""
    out = [f"# {md(page.title)}", "", md(page.summary), ""]
    out += [f"![{md(p.stem)}]({link(p, page.base)})" for p in page.pictures] + [""]
    out += ["## Per exercise", "", "| exercise | points | mean | median | students at zero |", "|---|---:|---:|---:|---:|"]
    out += [f"| {md(s.name)} | {s.max_score:g} | {s.mean:.3g} | {s.median:g} | {s.zeros} |" for s in page.stats]
    out += ["", "## Diagnosed mistakes, most common first", ""]
    if page.ranked:
        out += ["| students | exercise | mistake | who |", "|---:|---|---|---|"]
        out += [f"| {len(who)} | {md(ex)} | {md(concept)} | {md(_who(who))} |" for ex, concept, who in page.ranked]
    else:
        out.append("No confirmed mistake.")
    out += ["", "## To look at: not graded, flagged, modules that could not be graded", ""]
    if page.notes:
        out += ["| student | what | detail |", "|---|---|---|"]
        out += [f"| {md(who)} | {md(what)} | {md(detail, 500)} |" for who, what, detail in page.notes]
    else:
        out.append("Nothing: every submission was graded, none flagged.")
    out += ["", "## Students", "", "| student | score | folder | commit | committed | commits after the deadline | feedback |",
            "|---|---:|---|---|---|---:|---|"]
    for s in page.students:
        out.append(f"| {md(s.name)} | {s.score} | {md(s.folder)} | {md(s.commit)} | {md(s.committed)} | "
                   f"{md(s.commits_after_deadline)} | [feedback]({link(s.feedback, page.base)}) |")
    return "\n".join(out) + "\n"
