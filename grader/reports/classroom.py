"""GitHub Classroom: the payloads the grading reporter reads, and safe printing in Actions.

The reporter action (``classroom-resources/autograding-grading-reporter@v1``) reads one
environment variable per *runner*, ``<RUNNER upper-cased>_RESULTS``, holding base64 JSON::

    {"version": 1, "status": "pass|fail|error", "max_score": 10,
     "tests": [{"name": "...", "status": "pass|fail|error", "score": 1, "message": "...",
                "test_code": "", "filename": "", "line_no": 0, "duration": 0}]}

The workflow's grading step writes ``<runner>=<base64>`` to ``$GITHUB_OUTPUT`` (one runner
per exercise, see :func:`runner_name`) and the reporter step maps each output to that
variable. What the reporter does with it (v1 = commit d13b591):

- it posts ``sum(test.score)`` over runners whose ``max_score`` is non-zero, out of
  ``sum(max_score)``: that is the grade GitHub Classroom records;
- it prints, per runner, ``passes / len(tests) * max_score``: a different formula, equal to
  the first only when every test of a runner carries the same score;
- it prints ``message`` only for tests whose status is ``error``; it crashes on a payload
  without ``tests`` and prints NaN for an empty list.

**Encoding (our choice).** Every test of an exercise becomes ``points / unit`` reporter tests
of ``unit`` points each, where ``unit`` is the greatest common divisor of that exercise's
points (so with equal points, the usual case, one reporter test per hidden test). A reporter
test passes only when ours passed. Then both reporter formulas give exactly our exercise
score: posted ``= passed units x unit``, printed ``= passed units / units x max_score``.
If that would take more than :data:`MAX_UNITS` reporter tests, or the payload would not fit,
the exercise is sent as a few aggregate tests (``score / max_score`` as a small fraction
``p / n``: ``p`` passing tests out of ``n``) whose first failing one carries the messages.

Messages are student-controlled text that the reporter prints to the log: every string is
made one line, and the two workflow-command forms (``::cmd::`` at the start of a line,
``##[cmd]`` anywhere) are broken up. What the grader prints itself goes inside a
``::stop-commands::<token>`` block (:func:`commands_stopped`).
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import os
import re
import secrets
import sys
from fractions import Fraction
from pathlib import Path
from typing import Iterator, Mapping, TextIO

from grader.hygiene import LOG_CONTROL, LOG_LINE_BREAKS, clean_report, shortened
from grader.model import ExerciseResult, Report
from grader.reports.common import diagnosis_line

# Largest base64 payload per runner: environment strings over ~128 KiB cannot be passed at all.
PAYLOAD_LIMIT = 96 * 1024
# Most reporter tests one exercise may expand into (see the module docstring).
MAX_UNITS = 300
# Longest message kept per reporter test, tried in order until the payload fits.
MESSAGE_LIMITS = (1000, 200, 0)
NAME_LIMIT = 200
# Most reporter tests of the aggregate encoding (the denominator of score / max_score).
AGGREGATE_TESTS = 100

REPORTER_STATUS = {"passed": "pass", "failed": "fail", "error": "error", "timeout": "error"}



def runner_name(stem: str) -> str:
    """The reporter's runner name for an exercise: the stem lower-cased, alphanumerics only.

    ``self_attention_v1`` -> ``selfattentionv1``. The reporter accepts only
    ``[a-zA-Z0-9]+`` and reads ``<NAME upper-cased>_RESULTS``.
    """
    name = re.sub(r"[^a-z0-9]", "", stem.lower())
    if not name:
        raise ValueError(f"exercise {stem!r} has no letters or digits for a runner name")
    return name


def log_safe(text: str, limit: int) -> str:
    """``text`` as one line that cannot act as a workflow command, at most ``limit`` characters."""
    text = LOG_CONTROL.sub("", LOG_LINE_BREAKS.sub(" ", str(text))).replace("\t", " ")
    text = text.replace("##[", "# #[")
    if text.lstrip().startswith("::"):
        text = ": :" + text.lstrip()[2:]
    return shortened(text, limit) if limit > 0 else ""


def exercise_status(exercise: ExerciseResult) -> str:
    """``pass`` when every test passed; ``error`` when nothing ran (no test passed or failed
    on its merits); ``fail`` otherwise."""
    statuses = {t.status for t in exercise.tests}
    if exercise.tests and statuses == {"passed"}:
        return "pass"
    if not exercise.tests or statuses <= {"error", "timeout"}:
        return "error"
    return "fail"


def payload(exercise: ExerciseResult) -> dict:
    """The reporter's JSON for one exercise (the smallest-detail encoding that fits)."""
    for message_limit in MESSAGE_LIMITS:
        tests = unit_tests(exercise, message_limit)
        if tests is None:
            break
        data = _wrap(exercise, tests)
        if len(encode(data)) <= PAYLOAD_LIMIT:
            return data
    return _wrap(exercise, aggregate_tests(exercise))


def _wrap(exercise: ExerciseResult, tests: list[dict]) -> dict:
    return {"version": 1, "status": exercise_status(exercise), "max_score": exercise.max_score, "tests": tests}


def _exact(value: float) -> Fraction:
    """A float as the decimal it was written as (0.1 -> 1/10, not its binary expansion)."""
    return Fraction(repr(float(value)))


def unit_tests(exercise: ExerciseResult, message_limit: int) -> list[dict] | None:
    """One reporter test per point unit (see the module docstring), or None when the
    exercise's points do not split into at most :data:`MAX_UNITS` equal units."""
    points = [_exact(t.max_score) for t in exercise.tests]
    if not points or any(p <= 0 for p in points):
        return None
    unit = Fraction(math.gcd(*(p.numerator for p in points)), math.lcm(*(p.denominator for p in points)))
    if sum(p / unit for p in points) > MAX_UNITS:
        return None
    tests = []
    diagnosis = diagnosis_line(exercise.diagnosis)
    for test, p in zip(exercise.tests, points):
        count = int(p / unit)
        earned = _exact(test.score) / unit
        if earned.denominator != 1 or not (0 <= earned <= count) or (test.status == "passed") != (earned == count):
            return None  # partial credit inside a test: not representable by units
        for k in range(count):
            name = test.name if count == 1 else f"{test.name} ({k + 1}/{count})"
            passed = k < earned
            status = "pass" if passed else REPORTER_STATUS.get(test.status, "fail")
            message = "" if passed else test.message
            if not passed and diagnosis:  # the module's diagnosis, once, before its first failing check
                message, diagnosis = f"{diagnosis} | {message}", ""
            tests.append(_entry(name, status, float(unit) if passed else 0.0, message, message_limit))
    return tests


def aggregate_tests(exercise: ExerciseResult) -> list[dict]:
    """A few equal reporter tests whose pass ratio is ``score / max_score`` (approximately,
    to a fraction with denominator at most :data:`AGGREGATE_TESTS`); scores sum exactly."""
    ratio = Fraction(exercise.score / exercise.max_score).limit_denominator(AGGREGATE_TESTS) if exercise.max_score else Fraction(0)
    passes, count = ratio.numerator, ratio.denominator
    failing = [t for t in exercise.tests if t.status != "passed"]
    summary = "; ".join(f"{t.name}: {t.message}" for t in failing[:5])
    if exercise.diagnosis is not None:
        summary = f"{diagnosis_line(exercise.diagnosis)} | {summary}"
    status = "error" if failing and all(t.status in ("error", "timeout") for t in failing) else "fail"
    tests = []
    for k in range(count):
        name = f"{exercise.name} ({k + 1}/{count})"
        if k < passes:
            tests.append(_entry(name, "pass", exercise.score / passes, "", 0))
        else:
            message = f"{len(failing)} of {len(exercise.tests)} checks did not pass: {summary}" if k == passes else ""
            tests.append(_entry(name, status, 0.0, message, 500))
    return tests


def _entry(name: str, status: str, score: float, message: str, message_limit: int) -> dict:
    return {
        "name": log_safe(name, NAME_LIMIT),
        "status": status,
        "score": score,
        "message": log_safe(message, message_limit),
        "test_code": "",  # printed by the reporter when non-empty; the hidden tests stay hidden
        "filename": "",
        "line_no": 0,  # 0: the reporter prints no "- line N"
        "duration": 0,
    }


def encode(data: dict) -> str:
    """The base64 of the payload's JSON, as the reporter decodes it."""
    return base64.b64encode(json.dumps(data, ensure_ascii=False).encode()).decode("ascii")


def outputs(report: Report) -> dict[str, str]:
    """``{runner name: base64 payload}`` for every exercise of the report, in teaching order."""
    result: dict[str, str] = {}
    for exercise in clean_report(report).exercises:  # student text: valid UTF-8, no control characters
        name = runner_name(exercise.name)
        if name in result:
            raise ValueError(f"two exercises share the runner name {name!r}")
        result[name] = encode(payload(exercise))
    return result


def output_lines(report: Report) -> str:
    """What to append to ``$GITHUB_OUTPUT``: ``<runner>=<base64>`` lines."""
    return "".join(f"{name}={value}\n" for name, value in outputs(report).items())


def write_actions_files(report: Report, environ: Mapping[str, str] | None = None, *, payloads: bool = True) -> list[Path]:
    """Append the payloads to ``$GITHUB_OUTPUT`` and the job summary to
    ``$GITHUB_STEP_SUMMARY`` (each only when its variable is set); return the files written.

    ``payloads=False`` writes the summary only: a grade that is not the student's to keep
    (the grader failed on some check) must never reach GitHub Classroom.
    """
    from grader.reports.summary import markdown

    environ = os.environ if environ is None else environ
    written = []
    files = (("GITHUB_OUTPUT", output_lines(report) if payloads else ""), ("GITHUB_STEP_SUMMARY", markdown(report)))
    for variable, text in files:
        if not text:
            continue
        target = environ.get(variable)
        if target:
            try:
                with open(target, "a", encoding="utf-8") as handle:
                    handle.write(text)
            except OSError as exc:  # the report and the log still stand
                print(f"grader: could not write ${variable}: {exc.strerror}", file=sys.stderr)
                continue
            written.append(Path(target))
    return written


def in_actions(environ: Mapping[str, str] | None = None) -> bool:
    """Whether we run as a GitHub Actions step."""
    return (os.environ if environ is None else environ).get("GITHUB_ACTIONS") == "true"


def error_annotation(title: str, message: str) -> str:
    """A workflow ``::error::`` command: the run's page shows it in red (grader text only, one line)."""
    escape = lambda text: text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")  # noqa: E731
    return f"::error title={escape(title).replace(',', '%2C').replace(':', '%3A')}::{escape(message)}"


@contextlib.contextmanager
def commands_stopped(stream: TextIO | None = None) -> Iterator[str]:
    """Print between ``::stop-commands::<token>`` and ``::<token>::``: the runner then
    ignores workflow commands in anything printed (student messages, captured output).

    The token is random, so nothing a student wrote can end the block early.
    """
    stream = stream or sys.stdout
    token = secrets.token_hex(16)
    stream.write(f"::stop-commands::{token}\n")
    stream.flush()
    try:
        yield token
    finally:
        for other in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                other.flush()
        stream.write(f"::{token}::\n")
        stream.flush()
