"""``grade`` inside GitHub Actions: reporter payloads, the job summary, no injected commands.

The real command line runs with ``GITHUB_ACTIONS=true`` and temporary files for
``GITHUB_OUTPUT`` and ``GITHUB_STEP_SUMMARY``. Every payload is decoded, validated against
the reporter's schema, and fed to :class:`Reporter`, a Python model of what
``classroom-resources/autograding-grading-reporter@v1`` (commit d13b591) prints and posts;
both totals must equal our report's score.
"""

from __future__ import annotations

import base64
import json
import math
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import jsonschema
import pytest

from grader import rubric as rubrics
from grader import model
from grader.reports import classroom, summary
from project_tests.helpers import ROOT, grade_cli, make_submission, solution_sources, stub_sources

ASSIGNMENT = "ch03"

# What the reporter reads of a payload (src/main.js, console-results, notify-classroom).
PAYLOAD_SCHEMA = {
    "type": "object",
    "required": ["version", "status", "max_score", "tests"],
    "properties": {
        "version": {"const": 1},
        "status": {"enum": ["pass", "fail", "error"]},
        "max_score": {"type": "number", "exclusiveMinimum": 0},
        "tests": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["name", "status", "score", "message", "test_code", "line_no"],
                "properties": {
                    "name": {"type": "string", "minLength": 1, "pattern": "^[^\\r\\n]*$"},
                    "status": {"enum": ["pass", "fail", "error"]},
                    "score": {"type": "number", "minimum": 0},
                    "message": {"type": "string", "pattern": "^[^\\r\\n]*$"},
                    "test_code": {"type": "string", "pattern": "^[^\\r\\n]*$"},
                    "filename": {"type": "string"},
                    "line_no": {"type": "integer"},
                    "duration": {"type": "number"},
                },
            },
        },
    },
}


# -- a model of the reporter ---------------------------------------------------------------------


def to_fixed(value: float, digits: int = 2) -> str:
    """JavaScript's ``Number.prototype.toFixed`` (round half up on the exact binary value)."""
    return str(Decimal(value).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


@dataclass
class Reporter:
    """What the reporter does with ``runners`` and the ``<RUNNER>_RESULTS`` variables."""

    printed_total: float = 0.0  # the "Total:" row of its console table
    posted_total: float = 0.0  # "Points X/Y" notice: what GitHub Classroom records
    posted_max: float = 0.0
    lines: list[str] = field(default_factory=list)  # what it prints to the log
    failed: bool = False  # core.setFailed

    @classmethod
    def run(cls, runners: str, env: dict[str, str]) -> "Reporter":
        self = cls()
        results = []
        for runner in runners.split(","):
            encoded = env[f"{runner.strip().upper()}_RESULTS"]
            results.append((runner, json.loads(base64.b64decode(encoded).decode("utf-8"))))
        for runner, r in results:
            max_score = r.get("max_score") or 0
            tests = r["tests"]  # a payload without tests crashes the real one
            passes = sum(t["status"] == "pass" for t in tests)
            score = passes / len(tests) * max_score if tests else math.nan
            self.lines.append(f"🔄 Processing: {runner}")
            for t in tests:
                line = f" - line {t['line_no']}" if t.get("line_no") != 0 else ""
                if t["status"] == "pass":
                    self.lines.append(f"✅ {t['name']}{line}")
                elif t["status"] == "error":
                    message = t["message"] or f"Failed to run test '{t['name']}'"
                    self.lines += f"Error: {message}".split("\n")
                else:
                    self.lines.append(f"❌ {t['name']}{line}")
                if t.get("test_code"):
                    self.lines += ["Test code:", *t["test_code"].split("\n")]
            if max_score != 0:
                self.lines.append(f"Total points for {runner}: {to_fixed(score)}/{max_score}")
            self.printed_total += score
            if r.get("max_score"):
                self.posted_max += r["max_score"]
                self.posted_total += sum(t["score"] for t in tests)
        self.failed = any(r["status"] in ("fail", "error") for _, r in results)
        return self


def command_lines(lines: list[str]) -> list[str]:
    """Lines the Actions runner would take as workflow commands outside a stop-commands block."""
    found, token = [], None
    for raw in lines:
        for line in re.split(r"\r\n|\r|\n", raw):
            stripped = line.lstrip()
            if token is not None:
                if stripped.lower().startswith(f"::{token.lower()}::"):
                    token = None
                continue
            if stripped.startswith("::stop-commands::"):
                token = stripped[len("::stop-commands::"):].strip()
                if not re.fullmatch(r"[0-9a-f]{32}", token):
                    found.append(line)  # not one of ours
                continue
            if stripped.startswith("::") or "##[" in line:
                found.append(line)
    return found


def decode_outputs(path: Path) -> dict[str, str]:
    """``$GITHUB_OUTPUT`` as ``{name: value}`` (only ``name=value`` lines are written)."""
    pairs = {}
    for line in path.read_text().splitlines():
        name, sep, value = line.partition("=")
        assert sep and re.fullmatch(r"[a-z0-9]+", name), line
        pairs[name] = value
    return pairs


# -- the real command line on several submissions ------------------------------------------------


HOSTILE = "boom\n::notice title=x::y\n::set-output name=a::b%0A::error::z ##[add-mask]s <img src=x onerror=alert(1)> </pre> **bold**"


@dataclass
class Run:
    report: dict
    stdout: str
    outputs: dict[str, str]
    summary: str
    overrides: dict  # module stem -> source (None: left out) replacing the solution


def top_level_names(source: str) -> list[str]:
    """Functions and classes a module defines at top level, in order."""
    return re.findall(r"^(?:def|class) ([A-Za-z]\w*)", source, re.M)


def replaced(source: str, names: list[str], body: str) -> str:
    """``source`` with every name in ``names`` rebound to a function running ``body``."""
    return f"{source}\n\ndef _replacement(*args, **kwargs):\n    {body}\n\n" + "\n".join(f"{n} = _replacement" for n in names) + "\n"


def broken_cases(stems: list[str]) -> dict[str, dict]:
    """A module missing, one with a syntax error, one whose first function hangs: in one
    submission when the assignment has three modules or more (fewer runs), else one each."""
    solutions = solution_sources(ASSIGNMENT)
    breakages = [
        ("missing", lambda stem: None),
        ("syntax", lambda stem: "def broken(:\n"),
        ("hanging", lambda stem: replaced(solutions[stem], top_level_names(solutions[stem])[:1], "while True:\n        pass")),
    ]
    if len(stems) >= 3:
        order = [stems[1], stems[2], stems[0]]  # the hang where the rubric starts: the smallest module
        return {"broken": {stem: make(stem) for stem, (_, make) in zip(order, breakages)}}
    return {kind: {stems[0]: make(stems[0])} for kind, make in breakages}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Run]:
    """Grade every case once, in parallel, through ``python -m grader grade``."""
    base = tmp_path_factory.mktemp("actions")
    stems = [e.name for e in rubrics.load(ROOT / "tests" / ASSIGNMENT, ASSIGNMENT).exercises]
    first = solution_sources(ASSIGNMENT)[stems[0]]
    hostile = f"import sys\nprint({HOSTILE!r})\nprint('::warning::printed on stderr', file=sys.stderr)\n" + replaced(
        first, top_level_names(first), f"raise ValueError({HOSTILE!r})")
    cases = {"solutions": {}, "stubs": stub_sources(ASSIGNMENT), "hostile": {stems[0]: hostile}, **broken_cases(stems)}

    def grade(name: str) -> tuple[str, Run]:
        root = make_submission(base / name, ASSIGNMENT, cases[name])
        output, step_summary = base / f"{name}.output", base / f"{name}.summary"
        output.touch()
        step_summary.touch()
        env = {"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(step_summary)}
        proc, report = grade_cli(root, ASSIGNMENT, "--probe-timeout", "1", env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return name, Run(report, proc.stdout + proc.stderr, decode_outputs(output), step_summary.read_text(), cases[name])

    with ThreadPoolExecutor(max_workers=3) as pool:
        return dict(pool.map(grade, cases))


@pytest.fixture(params=["solutions", "stubs", "hostile", "broken"])
def run(request, runs) -> Run:
    """Each graded case; ``broken`` stands for every broken submission."""
    if request.param == "broken":
        return [r for name, r in runs.items() if name not in ("solutions", "stubs", "hostile")]
    return [runs[request.param]]


def reporter_of(run: Run) -> Reporter:
    """The reporter fed with this run's outputs, as the workflow maps them to variables."""
    return Reporter.run(",".join(run.outputs), {f"{k.upper()}_RESULTS": v for k, v in run.outputs.items()})


def payload_of(run: Run, stem: str) -> dict:
    return json.loads(base64.b64decode(run.outputs[classroom.runner_name(stem)], validate=True))


def test_payloads_follow_the_reporters_schema(run):
    for r in run:
        assert list(r.outputs) == [classroom.runner_name(e["name"]) for e in r.report["exercises"]]
        for exercise in r.report["exercises"]:
            assert len(r.outputs[classroom.runner_name(exercise["name"])]) < 96 * 1024
            data = payload_of(r, exercise["name"])
            jsonschema.validate(data, PAYLOAD_SCHEMA)
            assert data["max_score"] == exercise["max_score"]


def test_reporter_prints_and_posts_our_score(run):
    for r in run:
        reporter = reporter_of(r)
        assert reporter.posted_total == pytest.approx(r.report["score"], abs=1e-9)
        assert reporter.printed_total == pytest.approx(r.report["score"], abs=1e-9)
        assert reporter.posted_max == pytest.approx(r.report["max_score"], abs=1e-9)
        assert reporter.failed == (r.report["score"] < r.report["max_score"])
        assert command_lines(reporter.lines) == []


def test_full_marks_pass_and_stubs_do_not(runs):
    solutions = runs["solutions"]
    assert solutions.report["score"] == solutions.report["max_score"] > 0
    assert not reporter_of(solutions).failed
    assert all(payload_of(solutions, e["name"])["status"] == "pass" for e in solutions.report["exercises"])
    stubs = runs["stubs"]
    assert stubs.report["score"] == 0
    for exercise in stubs.report["exercises"]:
        data = payload_of(stubs, exercise["name"])
        assert data["status"] in ("fail", "error") and all(t["status"] != "pass" for t in data["tests"])


BROKEN_MESSAGE = {"missing": "is missing", "syntax": "SyntaxError", "hanging": "1 s"}


def test_a_broken_module_still_sends_tests_with_a_reason(runs):
    seen = set()
    for r in [r for name, r in runs.items() if name not in ("solutions", "stubs", "hostile")]:
        for exercise in r.report["exercises"]:
            source = r.overrides.get(exercise["name"], "")
            kind = "missing" if source is None else "syntax" if source.startswith("def broken(:") else (
                "hanging" if "while True" in source else None)
            data = payload_of(r, exercise["name"])
            assert data["tests"]
            if kind is None:
                assert data["status"] == "pass"  # a broken module hides no other
                continue
            seen.add(kind)
            assert data["status"] in ("fail", "error")
            assert all(t["message"] for t in data["tests"] if t["status"] != "pass")
            assert any(BROKEN_MESSAGE[kind] in t["message"] for t in data["tests"]), (kind, data["tests"][0])
            if kind == "hanging":
                assert any(t["status"] == "timeout" for t in exercise["tests"])
    assert seen == set(BROKEN_MESSAGE)


def test_stdout_carries_no_workflow_command(run):
    for r in run:
        assert command_lines(r.stdout.splitlines()) == []


def test_hostile_text_is_printed_only_inside_a_stop_commands_block(runs):
    lines = runs["hostile"].stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("::stop-commands::"))
    token = lines[start].split("::")[2]
    end = lines.index(f"::{token}::")
    inside, outside = "\n".join(lines[start:end]), "\n".join(lines[:start] + lines[end + 1:])
    # It was printed (student output and exception messages), so the check above means something.
    assert "::notice title=x::y" in inside and "::set-output" in inside and "::warning::" in inside
    assert "::" not in outside and "##[" not in outside


def test_job_summary_has_the_total_and_a_row_per_exercise(run):
    for r in run:
        assert f"{r.report['score']:g} / {r.report['max_score']:g} points" in r.summary
        for exercise in r.report["exercises"]:
            assert f"{summary.md(exercise['name'])} | {exercise['score']:g} / {exercise['max_score']:g} |" in r.summary


def test_job_summary_shows_failure_messages_escaped(runs):
    text = runs["hostile"].summary
    assert "ValueError" in text and "boom" in text
    assert "<img" not in text and "&lt;img" in text
    assert "</pre> **bold**" not in text and "\\*\\*bold\\*\\*" in text
    assert text.count("<pre>") == text.count("</pre>")
    broken = [r for name, r in runs.items() if name not in ("solutions", "stubs", "hostile")]
    assert any("SyntaxError" in r.summary for r in broken)


# -- the encoding on synthetic reports (no grading) ---------------------------------------------


def exercise_with(points: list[float], passed: list[bool], name="mixed") -> model.ExerciseResult:
    tests = [
        model.TestResult(f"test_{i}", "passed" if ok else "failed", p if ok else 0.0, p, "" if ok else f"wrong {i}")
        for i, (p, ok) in enumerate(zip(points, passed))
    ]
    return model.ExerciseResult(name, sum(t.score for t in tests), sum(t.max_score for t in tests), tests)


def reporter_for(*exercises: model.ExerciseResult) -> Reporter:
    report = model.Report("ch03", 0, 0, list(exercises))
    outputs = classroom.outputs(report)
    return Reporter.run(",".join(outputs), {f"{k.upper()}_RESULTS": v for k, v in outputs.items()})


@pytest.mark.parametrize(
    "points, passed",
    [
        ([1, 2, 3], [True, False, True]),
        ([0.5, 1.5, 2], [False, True, True]),
        ([2, 2, 2, 2], [True, False, False, True]),
        ([1, 0.25], [False, True]),
        ([3], [False]),
    ],
)
def test_unequal_points_keep_both_reporter_totals_equal_to_our_score(points, passed):
    exercise = exercise_with(points, passed)
    reporter = reporter_for(exercise)
    assert reporter.posted_total == pytest.approx(exercise.score, abs=1e-9)
    assert reporter.printed_total == pytest.approx(exercise.score, abs=1e-9)
    assert reporter.posted_max == pytest.approx(exercise.max_score)


def test_points_too_fine_for_units_post_exactly_and_print_nearly():
    exercise = exercise_with([100, 0.01], [True, False])  # 10001 units: the aggregate encoding
    data = classroom.payload(exercise)
    assert len(data["tests"]) <= classroom.AGGREGATE_TESTS
    reporter = reporter_for(exercise)
    assert reporter.posted_total == pytest.approx(exercise.score, abs=1e-9)  # what Classroom records
    assert reporter.printed_total == pytest.approx(exercise.score, abs=exercise.max_score / classroom.AGGREGATE_TESTS)


def test_one_reporter_test_per_hidden_test_when_points_are_equal():
    exercise = exercise_with([1, 1, 1], [True, False, True])
    data = classroom.payload(exercise)
    assert [t["name"] for t in data["tests"]] == ["test_0", "test_1", "test_2"]
    assert [t["status"] for t in data["tests"]] == ["pass", "fail", "pass"]
    assert data["tests"][1]["message"] == "wrong 1"


def test_huge_messages_are_cut_to_fit():
    tests = [model.TestResult(f"test_{i}", "error", 0.0, 1.0, "x" * 50_000) for i in range(250)]
    exercise = model.ExerciseResult("big", 0.0, 250.0, tests)
    encoded = classroom.outputs(model.Report("ch03", 0, 250, [exercise]))["big"]
    assert len(encoded) < 96 * 1024
    jsonschema.validate(json.loads(base64.b64decode(encoded)), PAYLOAD_SCHEMA)


def test_runner_names():
    assert classroom.runner_name("self_attention_v1") == "selfattentionv1"
    assert classroom.runner_name("Masked-Softmax") == "maskedsoftmax"
    with pytest.raises(ValueError):
        classroom.runner_name("___")


def test_summary_escapes_feedback_and_flags():
    feedback = model.Feedback(checked="f(x)", hint="*hint*", expected="[1, 2]", actual="<script>alert(1)</script>",
                        expected_grid=None, actual_grid=None)
    test = model.TestResult("test_x", "failed", 0.0, 1.0, "| broken | `code` [link](http://e.vil)", feedback)
    report = model.Report("ch03", 0.0, 1.0, [model.ExerciseResult("m", 0.0, 1.0, [test], output="</pre><b>x</b>")],
                    flags=["<b>evil</b>.pth tries to configure pytest or Python (ignored by the grader)"])
    text = summary.markdown(report)
    assert "<script>" not in text and "<b>" not in text
    assert "[link](" not in text and "\\| broken \\|" in text
    assert text.count("<pre>") == text.count("</pre>")


def diagnosed_report(failing: int = 6) -> model.Report:
    """One exercise with a diagnosis (a concept, a step, grids, student code) and many failing checks."""
    diagnosis = model.Diagnosis(
        concepts=["Divide the scores by sqrt(d_k)."], stage="attention weights (the softmax output)", checked="f(x)",
        expected="shape (2, 2)", actual="shape (2, 2)", expected_grid=[[1.0, 0.0], [0.14, 0.86]],
        actual_grid=[[0.5, 0.5], [0.0, 1.0]], where="causal.py, line 3, in forward", code="<script>x</script> ::warning::")
    tests = [model.TestResult(f"test_{i}", "failed", 0.0, 1.0, f"wrong {i}") for i in range(failing)]
    tests.append(model.TestResult("test_ok", "passed", 1.0, 1.0))
    return model.Report("ch03", 1.0, failing + 1.0, [model.ExerciseResult("causal", 1.0, failing + 1.0, tests,
                                                                          diagnosis=diagnosis)])


def test_the_summary_gives_one_diagnosis_per_module_on_top_then_the_checks():
    text = summary.markdown(diagnosed_report())
    assert text.count("Divide the scores by") == 1 and "<script>" not in text
    assert text.index("Divide the scores by") < text.index("test\\_0, test\\_1") < text.index("test\\_5")
    assert "░ 0.14" in text and "   ·  " in text and "█ 1.00" in text  # shades without colour; 0 is a dot
    assert "test\\_ok" not in text.split("### What to fix")[1]


def test_the_classroom_message_carries_the_diagnosis_once():
    data = json.loads(base64.b64decode(classroom.outputs(diagnosed_report())["causal"]))
    messages = [t["message"] for t in data["tests"]]
    assert sum("sqrt(d_k)" in m for m in messages) == 1 and "sqrt(d_k)" in messages[0]
    assert all("::warning::" not in m or not m.lstrip().startswith("::") for m in messages)


def test_the_terminal_draws_the_diagnosis_once_with_shades(monkeypatch):
    import io

    from rich.console import Console

    from grader.reports import terminal

    out = io.StringIO()
    terminal.show(diagnosed_report(), console=Console(file=out, width=120, color_system="standard", force_terminal=True))
    text = out.getvalue()
    assert text.count("sqrt(d_k)") == 1 and "░ 0.14" in text and "5 other" not in text
    assert "1 other check passed" in text
