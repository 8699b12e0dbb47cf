"""The student's own machine (grader/sandbox/local.py): the probe loop the sandbox drives, in
spawned interpreters, and the plan's time limit, which ``check`` on macOS and Windows relies on as
``grade`` relies on the sandbox's: on silence, as the sandbox's socket has it. A runner is shared by
two plans at once (``environment.verified`` runs the self-test's plan beside the check's own)."""

from __future__ import annotations

import threading
import time

import pytest

from grader.sandbox.client import SandboxError
from grader.sandbox.local import LocalRunner
from grader.sandbox.protocol import ModulePlan, Plan, ProbeCall
from grader.settings import Settings

pytestmark = [pytest.mark.end_to_end, pytest.mark.timeout(300)]

HANGS = """
import time
if NAP:
    time.sleep(NAP)

def f(x):
    while x == "hang":
        pass
    return x
"""
SLEEPS = "import time\n\ndef f(x):\n    time.sleep(x)\n    return x\n"


def plan(folder, stem: str, source: str, arguments: list, probe_timeout: float = 60.0) -> Plan:
    (folder / f"{stem}.py").write_text(source)
    probes = [ProbeCall(f"{stem}{k}", "call", {"function": "f", "args": [x], "seed": None}) for k, x in enumerate(arguments)]
    limits = Settings(probe_timeout=probe_timeout, module_budget=60.0, workers=1).sandbox_limits()
    return Plan(str(folder), {stem: ModulePlan(str(folder / "no-probes.py"), {}, 0, probes)}, limits, steps=False)


def test_a_plan_past_its_timeout_is_stopped_and_raises_and_the_runner_runs_the_next():
    with LocalRunner(workers=1) as runner:
        folder = runner.new_submission_dir()
        start = time.monotonic()
        with pytest.raises(SandboxError, match="did not answer within 3 s"):
            runner.run(plan(folder, "slow", HANGS.replace("NAP", "60.0"), [1], probe_timeout=120.0), timeout=3)
        assert time.monotonic() - start < 20  # not the module's minute of sleep
        outcomes = runner.run(plan(folder, "fast", HANGS.replace("NAP", "0.0"), [1, "hang", 3], probe_timeout=2.0),
                              timeout=120).outcomes
    assert [outcomes[f"fast{k}"].outcome for k in range(3)] == ["ok", "timeout", "ok"]
    assert outcomes["fast0"].value == {"$traced": 1} and outcomes["fast2"].value == {"$traced": 3}
    assert outcomes["fast1"].error.type == "Timeout"  # spelled as the sandbox spells it
    assert outcomes["fast1"].error.message == "this check did not finish within 2 s (infinite loop?)"


def test_the_limit_is_on_silence_so_a_plan_answering_within_it_runs_past_it_in_all():
    with LocalRunner(workers=1) as runner:
        folder = runner.new_submission_dir()
        runner.run(plan(folder, "warm", SLEEPS, [0]), timeout=300)  # the interpreter has imported torch
        outcomes = runner.run(plan(folder, "steady", SLEEPS, [6, 6, 6, 6]), timeout=15).outcomes  # 24 s in all
    assert [outcomes[f"steady{k}"].outcome for k in range(4)] == ["ok"] * 4


def test_a_plan_past_its_timeout_leaves_a_plan_running_beside_it_alone():
    with LocalRunner(workers=2) as runner:
        folder = runner.new_submission_dir()
        slow = plan(folder, "slowstart", "import time\ntime.sleep(60)\n\ndef f(x):\n    return x\n", [1])
        steady = plan(folder, "steady", SLEEPS, [8, 1])
        got = {}

        def beside():
            got.update(runner.run(steady, timeout=120).outcomes)

        thread = threading.Thread(target=beside)
        thread.start()
        time.sleep(4)  # the steady plan's interpreter is busy in its first check
        with pytest.raises(SandboxError):
            runner.run(slow, timeout=3)
        thread.join()
    assert [got[k].outcome if k in got else "missing" for k in ("steady0", "steady1")] == ["ok", "ok"], \
        {k: (v.outcome, v.error.message) for k, v in got.items()}
