"""A hostile class through ``python -m grader batch``: classmates that attack other modules,
other students, later runs and the instructor's own session and tools (``classmates.CLASS``).

The batch runs as the instructor's would, inside a session keyring that holds a secret (what
``login``, ``su -l``, systemd services and container runtimes give a shell), with ``--template``.
Then some classmates are graded alone. For the run as a whole: every student is in the CSV,
every output is valid UTF-8 without control or bidi characters, no key is left in any
keyring, the session's secret reaches no output, and each classmate graded alone gets the
grade it got in the batch.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from project_tests.adversarial.classmates import BY_NAME, CLASS, HOSTILE_TEXT
from project_tests.adversarial.evidence import assert_sound
from project_tests.adversarial.grader_runs import children_cpu, require_isolation, skip_without_isolation
from project_tests.adversarial.harness import PYTHON, fill, leftovers, load_json, new_stage, stub, walk
from project_tests.helpers import exercise

# The class's keyring check counts the keys the sandbox user owns on the whole machine: no other
# test may grade meanwhile (project_tests/conftest.py).
pytestmark = pytest.mark.alone

ASSIGNMENT = "ch03"
LIMITS = ("--probe-timeout", "5", "--memory-mb", "2560")  # honest classmates are graded: 5 s
SGR = re.compile(r"\x1b\[[0-9;]*m")  # select graphic rendition: colours and bold, nothing else
# What no output may carry: C0/C1 controls but the line break, bidi and invisible marks.
UNSAFE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\ud800-\udfff]")
SESSION = r'''
import ctypes, os, platform, sys
libc = ctypes.CDLL(None, use_errno=True)
add_key, keyctl = {"x86_64": (248, 250), "aarch64": (217, 219)}[platform.machine()]
L = ctypes.c_long
if libc.syscall(L(keyctl), L(1), None) < 0:  # KEYCTL_JOIN_SESSION_KEYRING: a new session keyring
    sys.exit("no session keyring: " + os.strerror(ctypes.get_errno()))
secret = sys.argv[1].encode()
if libc.syscall(L(add_key), b"user", b"instructor", secret, L(len(secret)), L(-3)) < 0:
    sys.exit("add_key: " + os.strerror(ctypes.get_errno()))
os.execv(sys.executable, [sys.executable, "-m", "grader", *sys.argv[2:]])
'''


def in_session(stage, secret: str, *args: str, env: dict | None = None, timeout: float = 900):
    """``python -m grader ARGS`` in a session keyring holding ``secret``; the process and its CPU seconds."""
    import subprocess

    start = children_cpu()
    proc = subprocess.run([PYTHON, "-c", SESSION, secret, *args], cwd=stage.repo, capture_output=True,
                          timeout=timeout, env={**stage.env, **(env or {})})
    return proc, children_cpu() - start


def worker_keys() -> int:
    """How many keys the user that runs student code owns (``/proc/key-users``): ``nobody``
    as root, else this user."""
    worker = 65534 if os.geteuid() == 0 else os.getuid()
    for line in Path("/proc/key-users").read_text().splitlines():
        uid, rest = line.split(":", 1)
        if int(uid) == worker:
            return int(rest.split()[1].split("/")[0])
    return 0


def source(stem: str, how: str, stage) -> str:
    """A module's source from a ``Classmate.modules`` entry (see its docstring)."""
    solution = (stage.repo / "solutions" / ASSIGNMENT / f"{stem}.py").read_text()
    base, _, code = how.partition("+")
    text = {"stub": stub(stem), "solution": solution}.get(base)
    if text is None:  # CODE+stub, or CODE holding @STUB@
        text = how.replace("@STUB@", stub(stem))
    else:
        text = f"{text}\n{code}\n" if code else text
    return fill(text, stage.values(TEXT=repr(HOSTILE_TEXT)))


def write_classmate(folder: Path, mate, stage) -> Path:
    exercises = folder / "exercises" / ASSIGNMENT
    exercises.mkdir(parents=True)
    for path in sorted((stage.repo / "solutions" / ASSIGNMENT).glob("*.py")):
        how = mate.modules.get(path.stem)
        (exercises / path.name).write_text(source(path.stem, how, stage) if how else path.read_text())
    for relative, text in mate.files.items():
        target = os.fsencode(folder) + b"/" + relative
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w") as handle:
            handle.write(text)
    for path in walk(folder):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder


@pytest.fixture(scope="module")
def graded():
    require_isolation()
    if not Path("/proc/key-users").exists():
        skip_without_isolation("this kernel has no keyrings to test")
    stage = new_stage()
    try:
        klass, out, solo_dir, template = (stage.base / name for name in ("class", "out", "solo", "template"))
        for folder in (klass, out, solo_dir):
            folder.mkdir(mode=0o777)
        (template / ".github" / "workflows").mkdir(parents=True)
        (template / ".github" / "workflows" / "classroom.yml").write_text("on: push\n")
        for mate in CLASS:
            write_classmate(klass / mate.name, mate, stage)
        keys_before = worker_keys()
        secret = f"session-secret-{stage.token}"
        csv, reports = out / "grades.csv", out / "reports"
        run, cpu_seconds = in_session(stage, secret, "batch", str(klass), "--assignment", ASSIGNMENT, "--csv", str(csv),
                                  "--reports", str(reports), "--template", str(template), "--jobs", "2", *LIMITS)
        solo = {}
        for mate in [m for m in CLASS if m.solo]:
            solo[mate.name], _ = in_session(stage, secret, "grade", str(klass / mate.name), "--assignment", ASSIGNMENT,
                                            "--json", str(solo_dir / f"{mate.name}.json"), *LIMITS)
        actions, _ = in_session(stage, secret, "grade", str(klass / "nasty_text"), "--assignment", ASSIGNMENT,
                                "--json", str(solo_dir / "actions.json"), *LIMITS, env={"GITHUB_ACTIONS": "true"})
        end = time.monotonic() + 30  # the kernel collects a dead worker's session keyring soon after
        while worker_keys() > keys_before and time.monotonic() < end:
            time.sleep(0.1)
        yield {
            "stage": stage, "run": run, "cpu_seconds": cpu_seconds, "secret": secret, "csv": csv.read_bytes() if csv.exists() else b"",
            "report_files": {p.parent.name: p.read_bytes() for p in reports.glob("*/REPORT.json")},
            "reports": {p.parent.name: load_json(p) for p in reports.glob("*/REPORT.json")},
            "solo": solo, "solo_reports": {name: load_json(solo_dir / f"{name}.json") for name in solo},
            "actions": actions, "keys": (keys_before, worker_keys()), "alive": leftovers(stage),
        }
    finally:
        stage.close()


def test_the_batch_grades_everyone(graded):
    run = graded["run"]
    assert run.returncode == 0, run.stderr[-3000:]
    assert set(graded["reports"]) == {m.name for m in CLASS}
    rows = graded["csv"].decode().splitlines()
    assert len(rows) == 1 + len(CLASS), rows
    assert graded["alive"] == []


@pytest.mark.parametrize("name", [m.name for m in CLASS])
def test_each_classmate_gains_nothing_and_costs_no_one_anything(graded, name):
    mate = BY_NAME[name]
    report = graded["reports"][name]
    assert_sound(report)
    for ex in report["exercises"]:
        bound = mate.bound.get(ex["name"], "any" if ex["name"] in mate.modules else "full")
        if bound == "full" and ex["name"] not in mate.modules:
            assert ex["score"] == ex["max_score"], (ex["name"], [t["message"][:200] for t in ex["tests"] if t["message"]][:3])
        elif bound == "stub":
            assert ex["score"] == 0, (ex["name"], ex["score"])
        if ex["name"] in mate.words:
            messages = [t["message"] for t in ex["tests"]] + [ex["message"]]
            assert any(mate.words[ex["name"]] in m for m in messages), messages[:3]


@pytest.mark.parametrize("name", [m.name for m in CLASS if m.solo])
def test_graded_alone_a_student_gets_the_same_grade(graded, name):
    assert graded["solo"][name].returncode == 0, graded["solo"][name].stderr[-3000:]
    alone, in_class = graded["solo_reports"][name], graded["reports"][name]

    def grades(report):
        return [(e["name"], t["name"], t["status"], t["score"]) for e in report["exercises"] for t in e["tests"]]

    assert grades(alone) == grades(in_class)
    assert alone["score"] == in_class["score"]


def test_no_key_is_left_and_the_session_keyring_is_never_read(graded):
    before, after = graded["keys"]
    # Not more than before: a key this run left would stay. (Fewer is a grading run elsewhere on
    # the machine, in another checkout, whose worker ended meanwhile: the user is the machine's.)
    assert after <= before
    secret = graded["secret"].encode()
    outputs = [graded["run"].stdout, graded["run"].stderr, graded["csv"], graded["actions"].stdout,
               graded["actions"].stderr, *graded["report_files"].values()]
    outputs += [p.stdout + p.stderr for p in graded["solo"].values()]
    assert [o[:200] for o in outputs if secret in o] == []
    gh = graded["stage"].gh
    assert all(secret not in (gh / name).read_bytes() for name in ("output", "summary"))


def test_every_output_is_clean_utf8(graded):
    stage = graded["stage"]
    outputs = {"batch stdout": graded["run"].stdout, "batch stderr": graded["run"].stderr, "csv": graded["csv"],
               "actions stdout": graded["actions"].stdout, "actions stderr": graded["actions"].stderr,
               "GITHUB_OUTPUT": (stage.gh / "output").read_bytes(), "summary": (stage.gh / "summary").read_bytes()}
    outputs |= {f"report {k}": v for k, v in graded["report_files"].items()}
    bad = {}
    for name, data in outputs.items():
        text = data.decode("utf-8")  # raises on anything that is not valid UTF-8
        if name == "actions stdout":  # the grader forces colour in the Actions log: its SGR codes, nothing else
            text = SGR.sub("", text)
        found = sorted(set(UNSAFE.findall(text)))
        if found:
            bad[name] = found
    assert bad == {}
    assert graded["actions"].returncode == 0, graded["actions"].stderr[-3000:]
    assert (stage.gh / "summary").read_bytes() and (stage.gh / "output").read_bytes()
    flags = " ".join(graded["reports"]["nasty_text"]["flags"])
    assert "\\xff\\xfe" in flags and "not UTF-8" in flags  # the name is shown, escaped
    assert "is a workflow that is not in the template" in flags


def test_sizes_stay_bounded(graded):
    assert 0 < graded["cpu_seconds"] < 400, graded["cpu_seconds"]  # CPU time: a busy machine cannot fail it
    assert len(graded["report_files"]["huge_messages"]) < 200_000
    for report in graded["reports"].values():
        for ex in report["exercises"]:
            assert len(ex["output"]) <= 2100
            for t in ex["tests"]:
                assert len(t["message"]) <= 2000


def test_empty_tensors_fail_checks_instead_of_the_grader(graded):
    report = graded["reports"]["empty_tensors"]
    for name in ("simple_attention", "causal"):
        ex = exercise(report, name)
        losing = [t for t in ex["tests"] if t["status"] != "passed"]
        assert losing and all("not your fault" not in t["message"] for t in losing), [t["message"] for t in losing]
    assert any(t["status"] == "failed" for t in exercise(report, "causal")["tests"])


def test_printing_costs_no_point_and_the_report_says_it_was_cut(graded):
    report = graded["reports"]["loud"]
    assert report["score"] == report["max_score"]
    assert "output cut" in exercise(report, "causal")["output"]


INTERVAL = re.compile(r"^interval (send|receive) ([0-9.]+) ([0-9.]+)$", re.M)


def intervals(reports) -> dict[str, list[tuple[str, float, float]]]:
    """What the channel payloads printed: for each side, (student, start, end) of its worker."""
    found: dict[str, list] = {"send": [], "receive": []}
    for name, report in reports.items():
        for ex in report["exercises"]:
            for side, start, end in INTERVAL.findall(ex["output"]):
                found[side].append((name, float(start), float(end)))
    return found


@pytest.mark.parametrize("where", ["batch", "alone"])
def test_no_receiver_ever_runs_beside_a_sender_and_no_channel_carries_anything(graded, where):
    """A worker holding the reference causal (or a classmate's causal) never runs while a causal
    worker runs, in the batch (two students at once) or alone (modules side by side): the file
    locks, watches and futexes refuse, and not overlapping leaves timing nothing to carry."""
    reports = graded["reports"] if where == "batch" else graded["solo_reports"]
    found = intervals(reports)
    assert found["receive"], "no receiver ran"
    if where == "batch":
        assert found["send"], "no sender ran"
    overlapping = [(r, s) for r in found["receive"] for s in found["send"] if r[1] < s[2] and s[1] < r[2]]
    assert overlapping == []
    for name, report in reports.items():
        output = exercise(report, "causal")["output"]
        assert "receiver {" not in output or "received" not in output.split("receiver {", 1)[1].split("}")[0], (name, output)


def test_a_receiver_scores_what_the_wrong_candidate_scores_alone(graded):
    for name in ("channel_self", "channel_receiver", "collude_receiver", "page_cache_receiver", "page_open_receiver"):
        alone, in_class = (exercise(graded[key][name], "causal") for key in ("solo_reports", "reports"))
        assert in_class["score"] == alone["score"] < in_class["max_score"], (name, in_class["score"], alone["score"])
