"""The student's own machine (grader/sandbox/local.py): the probe loop the sandbox drives, in
spawned interpreters, and the plan's overall time limit, which ``check`` on macOS and Windows
relies on as ``grade`` relies on the sandbox's."""

from __future__ import annotations

import time

import pytest

from grader.sandbox.client import SandboxError
from grader.sandbox.local import LocalRunner
from grader.sandbox.protocol import ModulePlan, Plan, ProbeCall
from grader.settings import Settings

pytestmark = [pytest.mark.end_to_end, pytest.mark.timeout(300)]

SOURCE = """
import time
if NAP:
    time.sleep(NAP)

def f(x):
    while x == "hang":
        pass
    return x
"""


def plan(folder, nap: float, arguments: list, probe_timeout: float = 2.0) -> Plan:
    (folder / "slow.py").write_text(SOURCE.replace("NAP", repr(nap)))
    probes = [ProbeCall(f"t{k}", "call", {"function": "f", "args": [x], "seed": None}) for k, x in enumerate(arguments)]
    limits = Settings(probe_timeout=probe_timeout, module_budget=60.0, workers=1).sandbox_limits()
    return Plan(str(folder), {"slow": ModulePlan(str(folder / "no-probes.py"), {}, 0, probes)}, limits, steps=False)


def test_a_plan_past_its_timeout_is_stopped_and_raises_and_the_runner_runs_the_next():
    with LocalRunner(workers=1) as runner:
        folder = runner.new_submission_dir()
        start = time.monotonic()
        with pytest.raises(SandboxError, match="did not answer within 3 s"):
            runner.run(plan(folder, 60.0, [1], probe_timeout=120.0), timeout=3)
        assert time.monotonic() - start < 20  # not the module's minute of sleep
        outcomes = runner.run(plan(folder, 0.0, [1, "hang", 3]), timeout=120).outcomes
    assert [outcomes[f"t{k}"].outcome for k in range(3)] == ["ok", "timeout", "ok"]
    assert outcomes["t0"].value == {"$traced": 1} and outcomes["t2"].value == {"$traced": 3}
    assert outcomes["t1"].error.type == "Timeout"  # spelled as the sandbox spells it
    assert outcomes["t1"].error.message == "this check did not finish within 2 s (infinite loop?)"
