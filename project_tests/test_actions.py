"""``grade`` inside GitHub Actions: reporter payloads, the job summary, no injected commands.

The real command line runs with ``GITHUB_ACTIONS=true`` and temporary files for
``GITHUB_OUTPUT`` and ``GITHUB_STEP_SUMMARY``. Every payload is decoded, validated against
the reporter's schema, and fed to ``Reporter`` (``project_tests/classroom_reporter.py``);
both totals must equal our report's score. The encoding on synthetic reports is in
``test_classroom_encoding.py``.
"""

from __future__ import annotations

import base64
import json
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import jsonschema
import pytest

from grader import rubric as rubrics
from grader.reports import classroom, summary
from project_tests.classroom_reporter import PAYLOAD_SCHEMA, Reporter, command_lines, decode_outputs
from project_tests.helpers import ROOT, grade_cli, make_submission, solution_sources, stub_sources

ASSIGNMENT = "ch03"

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
        proc, report = grade_cli(root, ASSIGNMENT, "--probe-timeout", "5", env=env)
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


BROKEN_MESSAGE = {"missing": "is missing", "syntax": "SyntaxError", "hanging": "5 s"}


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
