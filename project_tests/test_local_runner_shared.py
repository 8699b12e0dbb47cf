"""A LocalRunner is shared by two plans at once: ``environment.verified`` runs the self-test's plan
in a thread beside the check's own plan. One plan running past its timeout must stop only its own
interpreters, never the other plan's (whose student code would be judged as killed by a signal)."""

from __future__ import annotations

import threading
import time

import pytest

from grader.sandbox.client import SandboxError
from grader.sandbox.local import LocalRunner
from grader.sandbox.protocol import ModulePlan, Plan, ProbeCall
from grader.settings import Settings

pytestmark = [pytest.mark.end_to_end, pytest.mark.timeout(300)]


def plan(folder, stem: str, source: str, arguments: list) -> Plan:
    (folder / f"{stem}.py").write_text(source)
    probes = [ProbeCall(f"{stem}{k}", "call", {"function": "f", "args": [x], "seed": None}) for k, x in enumerate(arguments)]
    limits = Settings(probe_timeout=60.0, module_budget=60.0, workers=1).sandbox_limits()
    return Plan(str(folder), {stem: ModulePlan(str(folder / "no-probes.py"), {}, 0, probes)}, limits, steps=False)


def test_a_plan_past_its_timeout_leaves_a_plan_running_beside_it_alone():
    with LocalRunner(workers=2) as runner:
        folder = runner.new_submission_dir()
        slow = plan(folder, "slowstart", "import time\ntime.sleep(60)\n\ndef f(x):\n    return x\n", [1])
        steady = plan(folder, "steady", "import time\n\ndef f(x):\n    time.sleep(x)\n    return x\n", [8, 1])
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
