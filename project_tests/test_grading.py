"""The grader on honest and broken submissions, through the real command line."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from project_tests.helpers import (
    PYTHON, ROOT, assignments, exercise, grade_cli, grade_many, make_submission, mutate, solution_sources, stub_sources,
)


@pytest.mark.parametrize("assignment", assignments())
def test_solutions_score_full_marks(tmp_path, assignment):
    proc, report = grade_cli(make_submission(tmp_path / "s", assignment), assignment)
    assert proc.returncode == 0, proc.stderr
    assert report["grader_errors"] == []
    assert report["max_score"] > 0
    failing = [(e["name"], t["name"], t["message"]) for e in report["exercises"] for t in e["tests"] if t["status"] != "passed"]
    assert failing == []
    assert report["score"] == report["max_score"]
    assert "points" in proc.stdout  # the terminal summary


@pytest.mark.parametrize("assignment", assignments())
def test_stubs_score_zero_and_read_as_not_attempted(tmp_path, assignment):
    proc, report = grade_cli(make_submission(tmp_path / "s", assignment, stub_sources(assignment)), assignment)
    assert proc.returncode == 0, proc.stderr
    assert report["score"] == 0 and report["max_score"] > 0
    for ex in report["exercises"]:
        assert ex["message"] == "not attempted yet", ex["name"]
        for test in ex["tests"]:
            assert test["status"] == "error"
            assert test["message"].startswith("not attempted yet"), test["message"]
    assert "Traceback" not in proc.stdout


@pytest.mark.parametrize("assignment", assignments())
def test_exercises_folder_matches_the_solutions(assignment):
    committed = {p.stem: p.read_text() for p in sorted((ROOT / "exercises" / assignment).glob("*.py"))}
    assert committed == stub_sources(assignment), "regenerate exercises/ with python -m grader stubs --assignment " + assignment


def test_every_exercise_has_solution_stub_suite_and_rubric_entry():
    import tomllib

    for assignment in assignments():
        rubric = tomllib.loads((ROOT / "tests" / assignment / "rubric.toml").read_text())
        stems = set(rubric["exercises"])
        assert stems == set(solution_sources(assignment))
        for stem in stems:
            assert (ROOT / "tests" / assignment / f"test_{stem}.py").is_file()
            assert (ROOT / "exercises" / assignment / f"{stem}.py").is_file()


def test_unknown_assignment_and_missing_folder_exit_2(tmp_path):
    proc, report = grade_cli(make_submission(tmp_path / "s", "ch03"), "nope")
    assert proc.returncode == 2 and "no assignment 'nope'" in proc.stderr and report is None
    proc, report = grade_cli(tmp_path / "absent", "ch03")
    assert proc.returncode == 2 and report is None


# Runs ``main`` with the command's sandbox replaced by a stand-in that records whether torch
# was imported when the sandbox was asked for, then stops the command there.
SANDBOX_STARTED = """
import json, sys
import grader.sandbox.client as client, grader.sandbox.local as local
from grader.cli import main
def started(*args, **kwargs):
    print(json.dumps({"torch imported": "torch" in sys.modules}))
    raise SystemExit(0)
client.Sandbox = local.runner_for_this_machine = started
print(json.dumps({"exit": main(sys.argv[1:]), "torch imported": "torch" in sys.modules}))
"""


@pytest.mark.parametrize("command", ["grade", "check"])
def test_the_sandbox_starts_before_torch_is_imported_and_a_wrong_name_never_imports_it(command, tmp_path):
    """The sandbox's interpreter imports torch while the command imports it: the two overlap (about
    1.6 to 2 s less for ``check``, measured). A mistyped assignment is answered without either."""
    submission = str(make_submission(tmp_path / "s", "ch03"))
    for assignment, expected in (("ch03", {"torch imported": False}), ("nope", {"exit": 2, "torch imported": False})):
        proc = subprocess.run([PYTHON, "-c", SANDBOX_STARTED, command, submission, "--assignment", assignment],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert json.loads(proc.stdout.splitlines()[-1]) == expected, proc.stdout + proc.stderr


def test_a_failure_of_the_grader_itself_exits_3(tmp_path):
    # A bug inside the grader (simulated by breaking the report writer) is not a student's zero.
    submission = make_submission(tmp_path / "s", "ch03")
    script = ("import sys, grader.reports as r; from grader.cli import main\n"
              "def broken(report, path): raise OSError('disk full')\n"
              "r.write_json = broken\n"
              "sys.exit(main(sys.argv[1:]))")
    proc = subprocess.run([PYTHON, "-c", script, "grade", str(submission), "--assignment", "ch03",
                           "--json", str(tmp_path / "r.json"), "--quiet"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 3, proc.stderr
    assert "OSError: disk full" in proc.stderr and "the grader itself failed while running 'grade'" in proc.stderr


def test_limits_no_student_code_can_run_under_are_a_broken_environment(tmp_path):
    # The self-test before grading runs under the run's own limits: with too little memory for
    # any module, every student would get zero; the grader says so and grades nobody.
    proc, report = grade_cli(make_submission(tmp_path / "s", "ch03"), "ch03", "--memory-mb", "64")
    assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "the sandbox could not hand a tensor back" in proc.stderr and "--memory-mb" in proc.stderr and report is None


def test_a_grade_the_grader_failed_on_is_not_posted(tmp_path):
    """A check that fails in the grader's own code costs points that are not the student's to lose:
    in Actions the job exits 3 with an ::error::, writes the summary and no Classroom payload."""
    suite = tmp_path / "suite"
    shutil.copytree(ROOT / "tests" / "ch03", suite, ignore=shutil.ignore_patterns("__pycache__"))
    with (suite / "test_causal.py").open("a") as tests:
        tests.write("\n\n@pytest.mark.points(1)\ndef test_a_bug_of_the_graders():\n    raise RuntimeError('a bug in the suite')\n")
    output, summary = tmp_path / "output", tmp_path / "summary"
    proc, report = grade_cli(make_submission(tmp_path / "s", "ch03"), "ch03", "--suite", str(suite), env={
        "GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 3, proc.stderr
    assert report["score"] == report["max_score"] - 1 and any("a bug in the suite" in e for e in report["grader_errors"])
    assert not output.exists() or output.read_text() == ""  # nothing for the reporter to post
    assert "causal" in summary.read_text()
    assert "::error title=Not graded::the grader failed on 1 check(s)" in proc.stdout
    assert "this is not a grade and none was posted" in proc.stderr


BROKEN = {
    # name: (module overrides, module that loses points, expected status, words in the message)
    "empty": ("EMPTY", None, "error", "is missing from your submission"),
    "missing": ({"simple_attention": None}, "simple_attention", "error", "simple_attention.py is missing"),
    "syntax": ({"simple_attention": "def attention_scores(inputs, query)\n    return 1\n"},
               "simple_attention", "error", "simple_attention.py has a SyntaxError at line 1: expected ':'"),
    "import_error": ({"simple_attention": "import numpy_does_not_exist\n"},
                     "simple_attention", "error", "No module named 'numpy_does_not_exist'"),
    "exception": ({"simple_attention": ("def attention_scores(inputs, query):\n", "def attention_scores(inputs, query):\n    raise ValueError('boom')\n")},
                  "simple_attention", "error", "your code raised ValueError: boom (simple_attention.py, line"),
    "wrong_signature": ({"simple_attention": ("def attention_scores(inputs, query):", "def attention_scores(inputs):")},
                        "simple_attention", "error", "TypeError"),
    "nan": ({"simple_attention": ("    return inputs @ query\n", "    return (inputs @ query) * float('nan')\n")},
            "simple_attention", "failed", "NaN"),
    "wrong_shape": ({"simple_attention": ("    return inputs @ query\n", "    return (inputs @ query)[None]\n")},
                    "simple_attention", "failed", "expected shape (6,), got (1, 6)"),
    "wrong_type": ({"simple_attention": ("    return inputs @ query\n", "    return (inputs @ query).tolist()\n")},
                   "simple_attention", "failed", "expected a tensor, got a list"),
    "int_dtype": ({"simple_attention": ("    return inputs @ query\n", "    return (inputs @ query).long()\n")},
                  "simple_attention", "failed", "expected a float tensor"),
    "hang": ({"simple_attention": ("    return inputs @ query\n", "    while True:\n        pass\n")},
             "simple_attention", "timeout", "did not finish within 5 s"),
    "crash": ({"simple_attention": ("    return inputs @ query\n", "    import os; os.abort()\n")},
              "simple_attention", "error", "died from an abort"),
    "exit": ({"simple_attention": ("    return inputs @ query\n", "    import os; os._exit(3)\n")},
             "simple_attention", "error", "exited early with status 3"),
    "hang_at_import": ({"simple_attention": "while True:\n    pass\n"},
                       "simple_attention", "error", "importing the module did not finish within 5 s"),
}


def _sources(overrides):
    sources = {}
    for stem, change in overrides.items():
        if isinstance(change, tuple):
            sources[stem] = mutate(solution_sources("ch03")[stem], *change)
        else:
            sources[stem] = change
    return sources


def symlinked(root: Path) -> Path:
    """``root`` with simple_attention.py a symbolic link to the reference solution."""
    (root / "exercises" / "ch03" / "simple_attention.py").symlink_to(ROOT / "solutions" / "ch03" / "simple_attention.py")
    return root


def configured(root: Path) -> Path:
    """``root`` with files that try to configure pytest or shadow torch."""
    (root / "conftest.py").write_text("raise SystemExit('conftest ran')\n")
    (root / "pytest.ini").write_text("[pytest]\naddopts = -x\n")
    (root / "exercises" / "ch03" / "torch.py").write_text("raise ImportError('shadow')\n")
    return root


@pytest.fixture(scope="module")
def broken_reports(tmp_path_factory):
    """Every broken submission of BROKEN, and the two below, graded in one run (as in a batch)."""
    base = tmp_path_factory.mktemp("broken")
    roots = {}
    for name, (overrides, *_rest) in BROKEN.items():
        if overrides == "EMPTY":
            roots[name] = base / name
            roots[name].mkdir()
        else:
            roots[name] = make_submission(base / name, "ch03", _sources(overrides))
    roots["symlink"] = symlinked(make_submission(base / "symlink", "ch03", {"simple_attention": None}))
    roots["configured"] = configured(make_submission(base / "configured", "ch03"))
    reports = grade_many(list(roots.values()), "ch03", "--probe-timeout", "5")
    return {name: reports[root] for name, root in roots.items()}


@pytest.mark.parametrize("name", BROKEN)
def test_broken_submission_costs_only_its_module(broken_reports, name):
    overrides, module, status, words = BROKEN[name]
    report = broken_reports[name]
    assert report["grader_errors"] == []
    for ex in report["exercises"]:
        if module is None or ex["name"] == module:
            assert ex["score"] < ex["max_score"]
            losing = [t for t in ex["tests"] if t["status"] != "passed"]
            assert losing and all(t["status"] == status for t in losing), [(t["status"], t["message"]) for t in losing]
            assert any(words in t["message"] or words in ex["message"] for t in losing), [t["message"] for t in losing][:3]
        else:
            assert ex["score"] == ex["max_score"], (ex["name"], [t["message"] for t in ex["tests"] if t["message"]])


def test_a_hang_in_one_function_costs_only_its_tests(broken_reports):
    ex = exercise(broken_reports["hang"], "simple_attention")
    statuses = {t["name"]: t["status"] for t in ex["tests"]}
    assert statuses["test_matches_reference[attention_scores_textbook]"] == "timeout"
    assert statuses["test_matches_reference[normalize_naive_textbook]"] == "passed"


def test_a_syntax_error_says_its_location_once_and_shows_the_line_with_a_caret(broken_reports):
    from grader.model import Report
    from grader.reports import summary, terminal

    ex = exercise(broken_reports["syntax"], "simple_attention")
    assert ex["message"] == "simple_attention.py has a SyntaxError at line 1: expected ':'"  # no "(file, line 1)" again
    diagnosis = ex["diagnosis"]
    assert diagnosis["error"] == "SyntaxError: expected ':'" and diagnosis["where"] == "simple_attention.py, line 1"
    assert diagnosis["code"] == "def attention_scores(inputs, query)\n" + " " * 35 + "^"
    report = Report.from_dict(broken_reports["syntax"])
    text = summary.markdown(report).split("#### simple_attention.py")[1].split("####")[0]
    assert "<pre>    def attention_scores(inputs, query)\n" + " " * 39 + "^</pre>" in text
    assert text.count("line 1") == 1 and "None of its" in text
    out = io.StringIO()
    terminal.show(report, console=Console(file=out, width=100, force_terminal=False, color_system=None))
    shown = out.getvalue()
    code, caret = (next(line for line in shown.splitlines() if part in line) for part in ("def attention_scores", "^"))
    assert shown.count("line 1") == 1 and code.index("def attention_scores") + 35 == caret.index("^")
    assert "✗ simple_attention  0/" in shown and "test_matches_reference" not in shown  # one line, no table


def test_an_endless_loop_names_the_check_that_was_running(broken_reports):
    ex = exercise(broken_reports["hang"], "simple_attention")
    hung = [t for t in ex["tests"] if t["status"] == "timeout"]
    assert hung and all(f"the check {t['name']} did not finish within 5 s" in t["message"] for t in hung)
    assert f"It was running the check {hung[0]['name']}." in ex["diagnosis"]["error"]


def test_student_output_is_captured_and_truncated(tmp_path):
    noisy = mutate(solution_sources("ch03")["simple_attention"], "    return inputs @ query\n",
                   "    print('x' * 100000)\n    return inputs @ query\n")
    proc, report = grade_cli(make_submission(tmp_path / "s", "ch03", {"simple_attention": noisy}), "ch03")
    ex = exercise(report, "simple_attention")
    assert ex["score"] == ex["max_score"]
    kept, note = ex["output"].split("\n", 1)
    assert 0 < len(kept) <= 2000 and set(kept) == {"x"}
    assert note.startswith("… (output cut: ") and "more bytes were printed and not kept" in note
    assert "x" * 2001 not in proc.stdout


def test_student_output_names_its_files_without_the_temporary_folder_of_the_run(tmp_path):
    # A warning (or a print of __file__) names the submission's copy, a new temporary folder at each
    # run: the report says "simple_attention.py", the same on every run and every machine.
    warning = mutate(solution_sources("ch03")["simple_attention"], "    return inputs @ query\n",
                     "    import warnings\n    warnings.warn('look here')\n    print(__file__)\n    return inputs @ query\n")
    _, report = grade_cli(make_submission(tmp_path / "s", "ch03", {"simple_attention": warning}), "ch03")
    output = exercise(report, "simple_attention")["output"]
    assert "simple_attention.py:" in output and "UserWarning: look here" in output
    assert "\nsimple_attention.py\n" in "\n" + output
    assert "grader-sandbox" not in output and "submission-" not in output


def test_a_symbolic_link_is_refused_and_flagged(broken_reports):
    report = broken_reports["symlink"]
    ex = exercise(report, "simple_attention")
    assert ex["score"] == 0 and "symbolic link" in ex["message"]
    assert any("symbolic link" in flag for flag in report["flags"])


def test_configuration_files_are_flagged_and_ignored(broken_reports):
    report = broken_reports["configured"]
    assert report["score"] == report["max_score"]
    flagged = " ".join(report["flags"])
    assert "conftest.py" in flagged and "pytest.ini" in flagged and "torch.py" in flagged
