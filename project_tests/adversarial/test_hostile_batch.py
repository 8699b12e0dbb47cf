"""Hostile submissions graded in one bulk regrade: ``python -m grader batch``.

Every row of ``payloads.HOSTILE`` becomes one student of a class, next to an honest ``victim``
(the reference solutions) and ``honest_stub`` (the reference solutions with the target left as
the stub: the baseline no attack may beat). All are graded in one run, two at a time, as the
instructor's regrade would, so attacks on concurrently graded students are part of the test;
as root, the class is graded again by a user who is not root (student code in a user namespace).
For every hostile submission: its target module scores no more than the stub, every other
module keeps full marks, the report is valid, and the expected status and message appear.
For the run as a whole: no secret and no line of the hidden suite or the solutions appears in
any output, no file outside the sandbox changed, no process outlived grading, nothing reached
the network listener, nothing was unpickled, and the run used bounded CPU time.
"""

from __future__ import annotations

import functools
import json
import os

import pytest

from project_tests.adversarial.evidence import assert_sound, changes, hidden_lines, leaks, snapshot
from project_tests.adversarial.grader_runs import require_isolation, run_grader, run_unprivileged
from project_tests.adversarial.harness import (
    leftovers, load_json, new_stage, stub, wait_until_gone, write_submission,
)
from project_tests.adversarial.payloads import BY_NAME, HOSTILE, TARGET
from project_tests.helpers import exercise

PROBE_TIMEOUT = "5"  # honest students are graded in the same run: 5 s
# The whole class (about 50 submissions, several spinning until a probe timeout) in this many
# CPU seconds: the grader's and those of the processes it waited for. A bound on CPU, not on the
# clock, so a busy machine cannot fail it; the clock only gets a generous deadline (the timeout).
CPU_BOUND = 300


# As root, the class is graded twice: by root, and by a user who is not root (then student code
# runs in a user namespace, as on a machine without root where user namespaces are allowed; the
# page cache is not guarded there, so batch grades only when told to accept that).
MODES = ["as root", "without root"] if os.geteuid() == 0 else ["as this user"]


@pytest.fixture(scope="module", params=MODES)
def graded(request):
    extra = []
    if request.param == "without root":
        runner = functools.partial(run_unprivileged, user_namespaces=True)
        extra = ["--accept-weak-isolation"]
    else:
        require_isolation()
        runner = run_grader
    stage = new_stage()
    try:
        klass = stage.base / "class"
        out = stage.base / "out"
        reports = out / "reports"
        for folder in (klass, out, reports):
            folder.mkdir()
            folder.chmod(0o777)
        csv = out / "grades.csv"
        values = {"CLASS": str(klass), "VICTIM": str(klass / "victim"), "REPORTS": str(reports), "CSV": str(csv)}
        write_submission(klass / "victim", stage, None)
        write_submission(klass / "honest_stub", stage, None, target=stub(TARGET))
        for hostile in HOSTILE:
            write_submission(klass / hostile.name, stage, hostile, **values)
        before = snapshot(stage, {"class": klass})
        run = runner(stage, "batch", str(klass), "--assignment", "ch03", "--csv", str(csv), "--reports", str(reports),
                         "--jobs", "2", "--probe-timeout", PROBE_TIMEOUT, "--memory-mb", "2560", *extra, timeout=CPU_BOUND * 3)
        report_files = {p.parent.name: p.read_bytes() for p in reports.glob("*/REPORT.json")}
        csv_text = csv.read_text() if csv.exists() else ""
        alive_at_exit = leftovers(stage)
        # A detached process could act once the grader has gone; it can no longer once every
        # process of the run is gone. Wait for that event, then read the files again.
        alive_later = wait_until_gone(stage)
        yield {
            "stage": stage, "run": run, "reports": {k: load_json(reports / k / "REPORT.json") for k in report_files},
            "report_files": report_files, "csv": csv_text, "csv_later": csv.read_text() if csv.exists() else "",
            "report_files_later": {p.parent.name: p.read_bytes() for p in reports.glob("*/REPORT.json")},
            "alive_at_exit": alive_at_exit, "alive_later": alive_later,
            "changes": changes(before, snapshot(stage, {"class": klass})),
        }
    finally:
        stage.close()


def test_the_run_used_bounded_cpu_time_with_a_report_for_everyone(graded):
    run = graded["run"]
    assert run.returncode == 0, run.stderr[-3000:]
    assert 0 < run.cpu_seconds < CPU_BOUND, f"{run.cpu_seconds:.0f} CPU s"
    assert set(graded["reports"]) == {h.name for h in HOSTILE} | {"victim", "honest_stub"}


def test_baselines(graded):
    victim, stubbed = graded["reports"]["victim"], graded["reports"]["honest_stub"]
    assert victim["score"] == victim["max_score"] > 0, victim
    assert exercise(stubbed, TARGET)["score"] < exercise(stubbed, TARGET)["max_score"]
    assert stubbed["score"] == stubbed["max_score"] - exercise(stubbed, TARGET)["max_score"]


@pytest.mark.parametrize("name", [h.name for h in HOSTILE])
def test_hostile_submission_gains_nothing(graded, name):
    hostile = BY_NAME[name]
    report = graded["reports"][name]
    assert_sound(report)
    assert report["score"] == sum(e["score"] for e in report["exercises"])
    stub_score = exercise(graded["reports"]["honest_stub"], TARGET)["score"]
    for ex in report["exercises"]:
        if ex["name"] != TARGET and hostile.bound != "refused":
            assert ex["score"] == ex["max_score"], (ex["name"], [t["message"] for t in ex["tests"] if t["message"]][:3])
            continue
        losing = [t for t in ex["tests"] if t["status"] != "passed"]
        assert losing, f"{ex['name']}: nothing failed"
        if hostile.bound == "textbook":
            assert all("textbook" in t["name"] for t in ex["tests"] if t["status"] == "passed"), \
                [t["name"] for t in ex["tests"] if t["status"] == "passed"]
        else:
            assert ex["score"] <= stub_score, (ex["score"], stub_score)
        if hostile.bound == "refused" or ex["name"] == TARGET:
            assert {t["status"] for t in losing} <= hostile.status, {(t["status"], t["message"][:120]) for t in losing}
            messages = [t["message"] for t in losing] + [ex["message"]]
            assert not hostile.words or any(hostile.words in m for m in messages), messages[:4]
    for words in hostile.flags:
        assert any(words in flag for flag in report["flags"]), report["flags"]


def test_no_secret_and_no_hidden_source_in_any_output(graded):
    stage = graded["stage"]
    hidden = hidden_lines(stage)
    assert len(hidden) > 50  # the check has something to look for
    outputs = {"stdout": graded["run"].stdout, "stderr": graded["run"].stderr, "csv": graded["csv"]}
    outputs |= {f"report {k}": v.decode("utf-8", "replace") for k, v in graded["report_files"].items()}
    outputs |= {f"report {k}": json.dumps(v, ensure_ascii=False) for k, v in graded["reports"].items()}
    found = {name: leaks(stage, text, hidden) for name, text in outputs.items()}
    assert {k: v[:3] for k, v in found.items() if v} == {}


def test_no_file_outside_the_sandbox_changed(graded):
    assert graded["changes"] == []
    assert graded["report_files_later"] == graded["report_files"], "a report changed after grading"
    assert graded["csv_later"] == graded["csv"]
    assert graded["stage"].token not in graded["csv"]
    for student, report in graded["reports"].items():  # each as the grader wrote it, none forged
        assert_sound(report)
        assert graded["report_files"][student] == (json.dumps(report, indent=2) + "\n").encode()


def test_no_process_outlived_grading(graded):
    assert graded["alive_at_exit"] == []
    assert graded["alive_later"] == []


def test_nothing_reached_the_network_and_nothing_was_unpickled(graded):
    stage = graded["stage"]
    assert stage.received == []
    assert not (stage.base / "unpickled").exists()


def test_the_csv_agrees_with_the_reports(graded):
    rows = [line.split(",") for line in graded["csv"].splitlines()]
    header, body = rows[0], rows[1:]
    assert len(body) == len(graded["reports"])
    by_student = {row[header.index("student_id")]: row for row in body}
    for student, report in graded["reports"].items():
        assert float(by_student[student][header.index("score")]) == report["score"]
