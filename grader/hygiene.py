"""Text hygiene: whatever a student controls, made safe for every writer.

Student text reaches the terminal, REPORT.json, the job summary, the Actions log, the
Classroom payloads, the CSV and the gradebook: exception messages, printed output, class and
type names, file names (which need not be UTF-8). :func:`clean` is the one function all of them
use: bytes or str in, valid UTF-8 out (a lone surrogate or an invalid byte becomes U+FFFD),
without control characters (escape sequences, carriage returns, bells) or bidirectional
overrides, and capped. :func:`clean_report` applies it to every string of a report, so a writer
calls it once, at its output point, and never raises on student text.
"""

from __future__ import annotations

import dataclasses
import re

from grader.model import Diagnosis, ExerciseResult, Feedback, Report, TestResult

MESSAGE = 2000  # characters of one line of text (a message, a hint, a flag)
NAME = 200  # characters of a name (a test, an exercise, a student id)
BLOCK = 8000  # characters of a block (captured output, a grader error with its traceback)

# The characters that must not reach a reader as they are, in the three sets the grader uses
# (here together, so that a character is added to each that needs it). They differ by what is
# done with them and to which text:
# - clean() REMOVES them from any student text: every line break (as str.splitlines knows them)
#   becomes "\n" first, then the C0 and C1 controls but "\t" and "\n", and the invisible marks that
#   reorder or hide text (bidirectional marks, zero-width characters, the byte order mark) go.
_SURROGATES = re.compile(r"[\ud800-\udfff]")
_LINE_BREAKS = re.compile(r"\r\n?|[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1b\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
# - submission.shown() ESCAPES them in a submission's file name (``\u202e``), so that the
#   instructor reads the name the file really has, and a name holding one is flagged: every C0
#   control (a tab or a line break in a name is no layout), DEL and C1, the bidirectional marks, the
#   zero-width and invisible characters and the byte order mark (dropped by clean(), they would
#   make ``causal\u200b.py`` read as ``causal.py``), the other characters that draw nothing (the soft
#   hyphen, the Mongolian vowel separator, the deprecated format controls, the interlinear
#   annotation marks, the tag characters), and lone surrogates (bytes that are not UTF-8).
UNSAFE_IN_A_NAME = re.compile(r"[\x00-\x1f\x7f-\x9f\xad\u061c\u180e\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u206f"
                              r"\ufeff\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f]")
# - classroom.log_safe() makes a line of the Actions log of text clean() made already: a run of
#   line breaks becomes one space (a line break would end the runner's line), and the C0 controls
#   but the whitespace, and DEL, go (a line must never carry an escape sequence).
LOG_LINE_BREAKS = re.compile(r"[\r\n\x0b\x0c\x85\u2028\u2029]+")
LOG_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")


def clean(value: str | bytes | bytearray | object, limit: int = MESSAGE, *, one_line: bool = True) -> str:
    """``value`` as safe text: valid UTF-8, no control or bidi characters, at most ``limit``
    characters (an ellipsis marks a cut). ``one_line`` turns line breaks into spaces; else
    they are kept as ``\\n``. Tabs become spaces."""
    if isinstance(value, (bytes, bytearray)):
        text = bytes(value[: limit * 4 + 4]).decode("utf-8", "replace")
    else:
        text = value if isinstance(value, str) else str(value)
        text = text[: limit * 2 + 16]  # what the cut below could keep, with room for removed characters
    text = _SURROGATES.sub("\ufffd", text)
    text = _CONTROL.sub("", _LINE_BREAKS.sub("\n", text)).replace("\t", "    ")
    if one_line:
        text = " ".join(text.split("\n"))
    return shortened(text, limit)


def shortened(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters: whole when it fits, else cut after its last whole
    word that fits (a first word longer than the limit is cut where the limit falls), ended with "…"."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return "…" if limit == 1 else ""
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > 0 and not text[limit - 1].isspace():
        cut = cut[:space]
    return cut.rstrip() + "…"


def _grid(grid):
    """A matrix of numbers from a report: numbers kept, anything else made safe text."""
    if grid is None:
        return None
    return [[v if type(v) in (int, float) else clean(v, 16) for v in row] if isinstance(row, list) else clean(row, 16)
            for row in grid[:64]]


def _feedback(feedback: Feedback | None) -> Feedback | None:
    if feedback is None:
        return None
    return Feedback(
        checked=clean(feedback.checked), hint=clean(feedback.hint),
        expected=clean(feedback.expected, one_line=False), actual=clean(feedback.actual, one_line=False),
        expected_grid=_grid(feedback.expected_grid), actual_grid=_grid(feedback.actual_grid),
    )


def _code(text: str) -> str:
    """A line of the student's code, one line; or, for a syntax error, that line and a caret line under it."""
    lines = clean(text, one_line=False).split("\n")
    if len(lines) == 2 and lines[1].strip() == "^":
        return "\n".join(lines)
    return " ".join(lines)


def _diagnosis(diagnosis: Diagnosis | None) -> Diagnosis | None:
    if diagnosis is None:
        return None
    return Diagnosis(
        concepts=[clean(concept) for concept in diagnosis.concepts[:10]], stage=clean(diagnosis.stage),
        checked=clean(diagnosis.checked), expected=clean(diagnosis.expected, one_line=False),
        actual=clean(diagnosis.actual, one_line=False), expected_grid=_grid(diagnosis.expected_grid),
        actual_grid=_grid(diagnosis.actual_grid), error=clean(diagnosis.error), where=clean(diagnosis.where),
        code=_code(diagnosis.code), relation=clean(diagnosis.relation), origin=clean(diagnosis.origin),
        origin_code=clean(diagnosis.origin_code), origin_kind=diagnosis.origin_kind if diagnosis.origin_kind in ("value", "combination", "inputs", "uses", "call") else "shape",
        made=[clean(line) for line in diagnosis.made[:5]], inputs=[clean(line) for line in diagnosis.inputs[:5]],
        notes=[clean(line) for line in diagnosis.notes[:5]],
    )


def _test(test: TestResult) -> TestResult:
    return dataclasses.replace(test, name=clean(test.name, NAME), status=clean(test.status, 20),
                               message=clean(test.message), feedback=_feedback(test.feedback))


def _exercise(exercise: ExerciseResult) -> ExerciseResult:
    return dataclasses.replace(exercise, name=clean(exercise.name, NAME), message=clean(exercise.message),
                               output=clean(exercise.output, BLOCK, one_line=False),
                               tests=[_test(t) for t in exercise.tests], diagnosis=_diagnosis(exercise.diagnosis))


def clean_report(report: Report) -> Report:
    """A copy of ``report`` whose every string went through :func:`clean` (scores unchanged)."""
    return dataclasses.replace(
        report, assignment=clean(report.assignment, NAME),
        exercises=[_exercise(e) for e in report.exercises],
        flags=[clean(flag) for flag in report.flags],
        grader_errors=[clean(error, BLOCK, one_line=False) for error in report.grader_errors],
        isolation=clean(report.isolation, 500),
    )
