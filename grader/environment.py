"""Before any grading: can this environment grade at all? One line saying why not.

Every command calls :func:`verify` first. A broken environment must never look like a
student's zero: a missing package made every check of every student "could not run" on a
clean runner, and another torch version changes the seeded textbook values. So the grader
checks that the packages it needs import, that torch is the pinned version, and that the
sandbox starts and hands a tensor back intact; when not, the command exits 3 with
:class:`BrokenEnvironment`'s one line (and, inside GitHub Actions, posts no grade).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
import sys
import threading
from pathlib import Path
from typing import Iterator

from grader import accelerators
from grader.settings import Settings

REQUIREMENTS = Path(__file__).with_name("requirements.txt")
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# The distributions of grader/requirements.txt and the module each one provides.
MODULES = {"torch": "torch", "numpy": "numpy", "pytest": "pytest", "pytest-json-report": "pytest_jsonreport",
           "pytest-timeout": "pytest_timeout", "rich": "rich", "pyseccomp": "pyseccomp"}
# Needed by the sandbox's workers only, so only looked for (the self-test proves they work);
# pyseccomp only on Linux, where the sandbox runs (without libseccomp it degrades with a note).
LOOKED_FOR = {"numpy": True, "pyseccomp": sys.platform.startswith("linux")}
SELFTEST = "_grader_selftest"  # a module the grader writes itself, to try the sandbox's whole path


class BrokenEnvironment(RuntimeError):
    """This environment cannot grade; the message says what is wrong and how to fix it."""


def pins(path: Path = REQUIREMENTS) -> dict[str, str]:
    """``{distribution name: version}`` of every ``name==version`` line of ``path``."""
    found = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].split(";", 1)[0].strip()  # no comment, no environment marker
        if "==" in line:
            name, version = (part.strip() for part in line.split("==", 1))
            found[name.lower()] = version
    return found


def install_command() -> str:
    """What fixes the environment, for the one-line message."""
    return f"python -m pip install -r {REQUIREMENTS.relative_to(REQUIREMENTS.parent.parent).as_posix()} --extra-index-url {CPU_INDEX}"


def verify_packages() -> None:
    """Every package of the list imports, and torch is the pinned version (raise BrokenEnvironment)."""
    pinned = pins()
    for distribution, module in MODULES.items():
        if distribution in LOOKED_FOR:
            present = not LOOKED_FOR[distribution] or importlib.util.find_spec(module) is not None
        else:
            present = _imports(module)
        if not present:
            raise BrokenEnvironment(f"the package {distribution} is not installed; install what grading needs: {install_command()}")
    import torch

    # Every verb passes here before its own checks run: on a Mac, they compute on the CPU too
    # (the variables that hide the other accelerators were set at the entry point, grader/__main__.py).
    accelerators.hide_mps(torch)
    installed = torch.__version__.split("+", 1)[0]
    if installed != pinned["torch"]:
        raise BrokenEnvironment(
            f"torch {torch.__version__} is installed, but grading needs torch=={pinned['torch']} "
            f"(the textbook values depend on the version); install it: {install_command()}")


def _imports(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def verify_sandbox(runner, settings: Settings) -> None:
    """Send a tensor through ``runner`` (the sandbox, or the local runner) and back, under the
    run's own limits and sandbox user; raise BrokenEnvironment."""
    import torch

    from grader.sandbox import wire
    from grader.sandbox.protocol import ModulePlan, Plan, ProbeCall, unwrap

    folder = runner.new_submission_dir()
    # What exercise modules do: import torch, build a layer (of a few MB: memory a check needs), compute.
    (folder / f"{SELFTEST}.py").write_text(
        "import torch\nfrom torch import nn\n\n\ndef double(x):\n"
        "    layer = nn.Linear(1024, 1024, bias=False)\n"
        "    with torch.no_grad():\n        layer.weight.copy_(2 * torch.eye(1024))\n"
        "        return layer(nn.functional.pad(x, (0, 1024 - x.shape[-1])))[..., :x.shape[-1]]\n")
    sent = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    call = ProbeCall(SELFTEST, "call", {"function": "double", "args": [wire.encode_tensor(sent)], "seed": None})
    plan = Plan(str(folder), {SELFTEST: ModulePlan(str(folder / "no-probes.py"), uses={}, phase=0, probes=[call])},
                # The run's limits, but time enough for a sandbox still importing torch on a busy machine.
                dataclasses.replace(settings, probe_timeout=max(settings.probe_timeout, 60.0),
                                    module_budget=max(settings.module_budget, 60.0), workers=1).sandbox_limits())
    try:
        outcome = runner.run(plan, timeout=120).outcomes.get(SELFTEST)
    except Exception as exc:  # noqa: BLE001 - any failure here is the environment's
        raise BrokenEnvironment(f"the sandbox did not start ({type(exc).__name__}: {str(exc)[:300]}); "
                                f"check the installation: {install_command()}") from None
    if outcome is None or outcome.outcome != "ok":
        why = f"{outcome.error.type or outcome.outcome}: {outcome.error.message}".strip(": ") if outcome else "no answer"
        raise BrokenEnvironment(f"the sandbox could not hand a tensor back ({why[:300]}); check the limits "
                                f"for student code (--memory-mb, --probe-timeout) and the installation: {install_command()}")
    value = unwrap(outcome.value)  # the call's recorded steps aside
    if type(value) is not torch.Tensor or not torch.equal(value, sent * 2):
        raise BrokenEnvironment("the sandbox handed back a wrong tensor; the installation is broken: " + install_command())


def verify(runner, settings: Settings) -> None:
    """:func:`verify_packages`, then :func:`verify_sandbox` on ``runner``."""
    verify_packages()
    verify_sandbox(runner, settings)


@contextlib.contextmanager
def verified(runner, settings: Settings) -> Iterator[None]:
    """Check the packages now and the sandbox beside the body; raise BrokenEnvironment at the end.

    The sandbox's self-test waits for the sandbox to finish importing torch: done in a thread,
    that wait overlaps with what the body does meanwhile (collecting the suite), and no result
    of the body may be used unless this block ends without an exception.
    """
    verify_packages()
    failure: list[BaseException] = []

    def attempt() -> None:
        try:
            verify_sandbox(runner, settings)
        except BaseException as exc:  # noqa: BLE001 - raised again at the end of the block
            failure.append(exc)

    thread = threading.Thread(target=attempt, name="environment-check", daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join()
    if failure:
        raise failure[0]
