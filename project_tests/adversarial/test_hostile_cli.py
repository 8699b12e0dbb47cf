"""Hostile submissions through ``python -m grader grade``: inside GitHub Actions, against the
report's path, one submission after another, and run by a user who is not root (with user
namespaces, and with none: the fallback must still produce a valid report and say so).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time

import pytest

from grader import accelerators
from project_tests.adversarial.evidence import assert_sound, changes, hidden_lines, leaks, snapshot
from project_tests.adversarial.grader_runs import (
    require_isolation, run_grader, run_unprivileged, skip_without_isolation,
)
from project_tests.adversarial.harness import (
    PYTHON, leftovers, load_json, new_stage, stub, wait_until_gone, write_submission,
)
from project_tests.adversarial.payloads import BY_NAME, DAEMON, TARGET, Hostile, at_import
from project_tests.helpers import exercise

LIMITS = ("--probe-timeout", "5")  # the rest of each submission is honest code: 5 s


@pytest.fixture
def stage(request):
    if "without_root" not in request.node.name and "without_namespaces" not in request.node.name:
        require_isolation()  # these run hostile code as this user
    elif os.geteuid() != 0:
        skip_without_isolation("simulating a user who is not root needs root (to map the user namespace)")
    stage = new_stage()
    out = stage.base / "out"
    out.mkdir()
    out.chmod(0o777)  # the report's folder: writable by everyone
    yield stage
    stage.close()


def grade(stage, submission, report, *extra, env=None, runner=run_grader, **kw):
    run = runner(stage, "grade", str(submission), "--assignment", "ch03", "--json", str(report), *LIMITS, *extra,
                 env=env, **kw)
    assert run.returncode == 0, run.stderr[-3000:]
    return run, load_json(report)


def check_gains_nothing(report: dict) -> None:
    """The target scored nothing (as the stub), every other module full marks, a valid report."""
    assert_sound(report)
    for ex in report["exercises"]:
        assert ex["score"] == (0 if ex["name"] == TARGET else ex["max_score"]), (ex["name"], ex["message"])


SGR = re.compile(r"\x1b\[[0-9;]*m")  # select graphic rendition: colours and bold, nothing else


def outside_stop_commands(text: str) -> list[str]:
    """Lines of ``text`` outside ``::stop-commands::TOKEN`` ... ``::TOKEN::`` blocks."""
    lines, token = [], None
    for line in text.splitlines():
        if token is None and (match := re.fullmatch(r"::stop-commands::(\S+)", line)):
            token = match.group(1)
        elif token is not None and line == f"::{token}::":
            token = None
        elif token is None:
            lines.append(line)
    return lines


def test_in_actions_student_text_never_becomes_a_workflow_command(stage):
    hostile = BY_NAME["workflow_commands"]
    files = {  # file names are flagged, so they reach the log too
        "exercises/ch03/x\n::error title=Autograding::70 of 70.py": "",
        "notes\n##[warning]forged.txt": "",
        "\x1b[2K\x1b[1Ach03: 70 of 70 points.py": "",
    }
    sub = write_submission(stage.base / "s", stage, Hostile(**{**hostile.__dict__, "files": files}))
    env = {"GITHUB_ACTIONS": "true"}
    run, report = grade(stage, sub, stage.base / "out" / "report.json", env=env)
    check_gains_nothing(report)
    for stream in (run.stdout, run.stderr):
        commands = [line for line in outside_stop_commands(stream) if line.lstrip().startswith("::") or "##[" in line]
        assert commands == []
        assert "\x1b" not in SGR.sub("", stream)  # only the colours the grader forces in Actions
    assert stage.token in run.stdout  # what the student printed is shown, inside the block
    output = (stage.gh / "output").read_text()
    assert stage.token not in output and "forged" not in output
    assert all(re.fullmatch(r"[a-z0-9]+=[A-Za-z0-9+/=]*", line) for line in output.splitlines()), output[:500]
    assert (stage.gh / "env").read_text() == "" and (stage.gh / "path").read_text() == ""


def test_a_detached_process_cannot_rewrite_the_report_after_the_grader_exits(stage):
    sub = write_submission(stage.base / "s", stage, BY_NAME["detached_report_rewriter"],
                           REPORTS=str(stage.base / "out"), CSV=str(stage.base / "out" / "x.csv"))
    path = stage.base / "out" / "report.json"
    run, report = grade(stage, sub, path)
    written = path.read_bytes()
    assert wait_until_gone(stage) == []  # the rewriter could act only while it lived: now the file is final
    assert path.read_bytes() == written
    check_gains_nothing(report)


NEXT_VICTIM = at_import('''
hook = "import os; os.environ['GRADER_HACKED'] = '@TOKEN@'\\n"
for path in ("@SITE@/zzz_@TOKEN@.pth", "@SITE@/sitecustomize.py", "@STDLIB@/sitecustomize.py",
             "@REPO@/grader/__init__.py", "@REPO@/grader/comparisons.py", "@REPO@/tests/ch03/textbook.py"):
    _write(path, hook, "a")
for folder in ("@REPO@/grader/__pycache__", "@REPO@/tests/ch03/__pycache__", "/tmp", "/dev/shm", "/var/tmp"):
    _write(folder + "/simple_attention.py", "raise SystemExit('@TOKEN@')\\n")
    _write(folder + "/torch.py", "raise SystemExit('@TOKEN@')\\n")
''' + DAEMON + '''
def plant():  # keep planting while the next submission is graded
    end = time.time() + 30
    while time.time() < end:
        for folder in ("/tmp", "/dev/shm"):
            for name in _list(folder):
                if name.startswith("grader-sandbox-"):
                    for sub in _list(f"{folder}/{name}"):
                        _write(f"{folder}/{name}/{sub}/simple_attention.py", "raise SystemExit('@TOKEN@')\\n")
        time.sleep(0.05)
_daemon(plant)
''')


def test_a_hostile_submission_cannot_compromise_the_next_one(stage):
    first = write_submission(stage.base / "first", stage, None, target=NEXT_VICTIM.replace("@STUB@", stub(TARGET)))
    honest = write_submission(stage.base / "honest", stage, None)
    before = snapshot(stage, {"honest": honest})
    _, report = grade(stage, first, stage.base / "out" / "first.json")
    check_gains_nothing(report)
    run, report = grade(stage, honest, stage.base / "out" / "honest.json")
    assert report["score"] == report["max_score"], report
    assert changes(before, snapshot(stage, {"honest": honest})) == []
    fresh = subprocess.run([PYTHON, "-c", "import os; print(os.environ.get('GRADER_HACKED'))"],
                           capture_output=True, text=True, cwd=stage.repo)
    assert fresh.stdout.strip() == "None"
    assert leftovers(stage) == []


def writable_memory(pid: int) -> bytes:
    """Every private writable mapping of a process (heap, stacks, anonymous memory), as root."""
    chunks = []
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for line in maps:
            fields = line.split()
            if not fields[1].startswith("rw"):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            try:
                mem.seek(start)
                chunks.append(mem.read(end - start))
            except (OSError, OverflowError, ValueError):
                continue
    return b"".join(chunks)


@pytest.mark.skipif(os.geteuid() != 0, reason="reading another user's process memory needs root")
def test_a_worker_holds_no_secret_in_its_environment_or_memory(stage):
    """The zygote was exec'd with an empty environment: its forked workers never had a secret.

    The target's worker sleeps until the test, having inspected it, kills it: no window of a
    guessed length in which the inspection must happen.
    """
    sub = write_submission(stage.base / "s", stage, None, target=at_import("time.sleep(3600)").replace("@STUB@", stub(TARGET)))
    args = [PYTHON, "-m", "grader", "grade", str(sub), "--assignment", "ch03", "--json", str(stage.base / "out" / "r.json"),
            "--probe-timeout", "600"]
    grader = subprocess.Popen(args, cwd=stage.repo, env=stage.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        secrets = [s.encode() for s in stage.secrets]
        inspected = []
        end = time.monotonic() + 300  # a generous deadline for the event "a forked worker is up"
        while not inspected and time.monotonic() < end and grader.poll() is None:
            for pid in [pid for pid, uid, _ in leftovers(stage) if uid == 65534]:
                try:  # workers of the honest modules come and go: inspect one that stays
                    environ = open(f"/proc/{pid}/environ", "rb").read()
                    memory = writable_memory(pid)
                except OSError:
                    continue
                if len(memory) < 10_000_000:  # not yet the forked interpreter
                    continue
                names = {item.split(b"=")[0] for item in environ.split(b"\0") if item}
                # the zygote's fresh environment: the accelerators it hides, nothing of the grader's
                assert names <= {b"PATH", b"LANG", b"OMP_NUM_THREADS", b"HOME", *map(str.encode, accelerators.HIDDEN)}, names
                assert [s for s in secrets if s in memory] == []
                inspected.append(pid)
            time.sleep(0.05)
        assert inspected, "no sandboxed worker seen"
        assert all(s in writable_memory(grader.pid) for s in secrets)  # where they are: the check can fail
    finally:
        while grader.poll() is None:  # end the sleeping worker (the grader reports it as a crash)
            for pid in [pid for pid, uid, _ in leftovers(stage) if uid == 65534]:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                grader.wait(timeout=0.2)
    assert wait_until_gone(stage) == []


# Without root: the same attacks, with student code in a user namespace of the grader's user.
UNPRIVILEGED_ATTACK = at_import(DAEMON + '''
import glob, json
loot = []
for path in glob.glob("@REPO@/tests/**/*.py", recursive=True) + glob.glob("@REPO@/solutions/**/*.py", recursive=True):
    text = _try(lambda: open(path).read())
    loot.append(text if isinstance(text, str) else "")
for pid in _pids():
    data = _try(lambda: open(f"/proc/{pid}/environ", "rb").read())
    loot.append(data.decode("utf-8", "replace") if isinstance(data, bytes) else "")
_write("@REPO@/grader/comparisons.py", "# @TOKEN@\\n", "a")
_write("@SITE@/zzz_@TOKEN@.pth", "import os\\n")
_write("@OUT@/report.json", json.dumps({"score": 75, "forged": "@TOKEN@"}))
_daemon(lambda: _try(os.execv, "/bin/sh", ["/bin/sh", "-c", "sleep 120 # @TOKEN@"]))
print(" | ".join(loot))
''')


def test_without_root_user_namespaces_isolate_as_well(stage):
    """Here the grader's user owns the repository and the venv, as on a runner."""
    sub = write_submission(stage.base / "s", stage, None,
                           target=UNPRIVILEGED_ATTACK.replace("@STUB@", stub(TARGET)).replace("@OUT@", str(stage.base / "out")))
    before = snapshot(stage, {"submission": sub})
    run, report = grade(stage, sub, stage.base / "out" / "report.json", runner=run_unprivileged, user_namespaces=True)
    assert "without Linux namespaces" not in run.stderr, run.stderr
    check_gains_nothing(report)
    hidden = hidden_lines(stage)
    assert leaks(stage, run.stdout + run.stderr + json.dumps(report), hidden) == []
    assert wait_until_gone(stage) == []
    assert changes(before, snapshot(stage, {"submission": sub})) == []


STOPPER = at_import(DAEMON + '''
def _stop_everyone():  # every process of its PID namespace it may signal: as this user, every new worker
    while True:
        _try(os.kill, -1, signal.SIGSTOP)
_daemon(_stop_everyone)
''')


def test_without_root_a_process_left_to_stop_every_new_worker_cannot_hang_the_grading(stage):
    """Without root, a new worker has the user of what an earlier one left behind until it has
    killed it: stopped first, it is "lost" (Box.spawn waits confine.PREPARING seconds, then kills
    it), its module gets an error, and a slot that needed it to end a phase closes its box, so
    the grading ends (it hung, before). One slot (--workers 1): every module shares the box."""
    sub = write_submission(stage.base / "s", stage, None, target=STOPPER)
    run, report = grade(stage, sub, stage.base / "out" / "report.json", "--workers", "1", runner=run_unprivileged,
                        user_namespaces=True, timeout=300)
    assert_sound(report)
    assert exercise(report, TARGET)["score"] == 0
    assert wait_until_gone(stage) == []


# In the fallback the student's code runs as the grader's own user: it could write what that
# user may write (see docs/threat-model.md), so only attacks that must still fail are tried.
FALLBACK_ATTACK = at_import(DAEMON + '''
loot = []
for pid in _pids():
    data = _try(lambda: open(f"/proc/{pid}/environ", "rb").read())
    loot.append(data.decode("utf-8", "replace") if isinstance(data, bytes) else "")
_daemon(lambda: _try(os.execv, "/bin/sh", ["/bin/sh", "-c", "sleep 120 # @TOKEN@"]))
_daemon(lambda: time.sleep(120))
status = _try(lambda: open("/proc/self/status").read())
print("NoNewPrivs", status.split("NoNewPrivs:")[1].split()[0] if isinstance(status, str) else "?")
print(" | ".join(loot))
''')


def test_without_namespaces_the_grader_falls_back_and_says_so(stage):
    sub = write_submission(stage.base / "s", stage, None, target=FALLBACK_ATTACK.replace("@STUB@", stub(TARGET)))
    run, report = grade(stage, sub, stage.base / "out" / "report.json", runner=run_unprivileged, user_namespaces=False)
    assert "note: student code ran without Linux namespaces" in run.stderr and "fallback" in run.stderr
    check_gains_nothing(report)
    assert leaks(stage, run.stdout + run.stderr + json.dumps(report), []) == []  # no secret from /proc
    assert "NoNewPrivs 1" in exercise(report, TARGET)["output"]
    assert wait_until_gone(stage) == []


AS_THE_INSTRUCTOR = at_import('''
import os
for path in ("@SELF@/../../repo/tests/LOOTED", os.path.expanduser("~/LOOTED")):
    try:
        open(path, "w").write("ran as the instructor")
    except OSError:
        pass
''')


def test_batch_without_namespaces_refuses_rather_than_run_students_as_the_instructor(stage):
    """The grade of record is never made where student code would run as the instructor's own
    user: ``batch`` refuses before any of it runs, and writes nothing; told to accept that, it
    grades and says so in every REPORT.json, the CSV and the class report."""
    klass, out = stage.base / "class", stage.base / "out"
    klass.mkdir()
    klass.chmod(0o777)
    write_submission(klass / "mallory", stage, None, target=AS_THE_INSTRUCTOR.replace("@STUB@", stub(TARGET)))
    args = ("batch", str(klass), "--assignment", "ch03", "--csv", str(out / "grades.csv"), *LIMITS)
    refused = run_unprivileged(stage, *args, user_namespaces=False)
    assert refused.returncode == 3, refused.stderr[-3000:]
    assert "batch grades only where student code runs fully isolated" in refused.stderr
    assert "--accept-weak-isolation" in refused.stderr and "Traceback" not in refused.stderr
    assert not (stage.repo / "tests" / "LOOTED").exists()
    assert list(out.iterdir()) == []  # no CSV, no report, no class report
    (klass / "mallory" / "exercises" / "ch03" / f"{TARGET}.py").write_text(stub(TARGET))  # an honest stub now
    accepted = run_unprivileged(stage, *args, "--accept-weak-isolation", user_namespaces=False)
    assert accepted.returncode == 0, accepted.stderr[-3000:]
    report = load_json(out / "ch03-reports" / "mallory" / "REPORT.json")
    assert report["isolation"].startswith("no namespaces")
    assert "no namespaces" in (out / "grades.csv").read_text()
    assert "WEAK isolation" in (out / "grades-report.md").read_text()


def test_batch_without_root_refuses_a_page_cache_shared_between_students(stage):
    """Without root, student code runs in a user namespace (isolation level 2), but only root can
    guard the page cache that a batch's students share (fanotify permission events): a student's
    code could signal to a classmate graded after it. ``batch`` refuses before any student's code
    runs and says to run it as root; told to accept that, it grades and records why the isolation
    was weaker in every REPORT.json, the CSV and the class report."""
    klass, out = stage.base / "class", stage.base / "out"
    klass.mkdir()
    klass.chmod(0o777)
    for name in ("alice", "bob"):  # two students: a class
        write_submission(klass / name, stage, None, target=stub(TARGET))
    args = ("batch", str(klass), "--assignment", "ch03", "--csv", str(out / "grades.csv"), *LIMITS)
    refused = run_unprivileged(stage, *args, user_namespaces=True)
    assert refused.returncode == 3, refused.stderr[-3000:]
    assert "page cache" in refused.stderr and "sudo" in refused.stderr and "Traceback" not in refused.stderr
    assert "--accept-weak-isolation" in refused.stderr
    assert list(out.iterdir()) == []
    accepted = run_unprivileged(stage, *args, "--accept-weak-isolation", user_namespaces=True)
    assert accepted.returncode == 0, accepted.stderr[-3000:]
    report = load_json(out / "ch03-reports" / "alice" / "REPORT.json")
    assert report["isolation"].startswith("namespaces") and "page cache shared between students" in report["isolation"]
    assert "page cache shared between students" in (out / "grades.csv").read_text()
    assert "WEAK isolation" in (out / "grades-report.md").read_text()

