"""Runs inside the sandboxed process, next to student code: import one module, run its probes.

Nothing here is trusted by the grader. The worker writes one JSON line per event to its
result channel: ``ready`` (or ``import_error``), then one ``result`` per probe, in the order
of the plan. The zygote times each line and ``wire.decode`` validates what it carries.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback

from grader.sandbox import wire


class ProbeError(Exception):
    """Raised by a probe when student code returned something that cannot be graded."""


def exact_tensor(value, what: str):
    """``value`` if it is exactly a ``torch.Tensor`` (not a subclass), else a ProbeError."""
    import torch

    if type(value) is torch.Tensor:
        return value.detach().clone()
    if isinstance(value, torch.Tensor):
        raise ProbeError(
            f"{what} is a {type(value).__name__}, a subclass of torch.Tensor; return a plain torch.Tensor"
        )
    raise ProbeError(f"{what} should be a torch.Tensor, but it is a {type(value).__name__}")


def to_plain(value, what: str = "the result", depth: int = 0):
    """Convert what a probe returns into plain data; tensors must be exact torch.Tensors."""
    import torch

    if depth > 8:
        raise ProbeError(f"{what} is nested too deeply")
    if isinstance(value, torch.Tensor):
        return wire.encode_tensor(exact_tensor(value, what))
    if value is None or type(value) in (bool, int, float, str):
        return value
    if type(value) in (list, tuple):
        return [to_plain(v, f"{what}[{i}]", depth + 1) for i, v in enumerate(value)]
    if type(value) is dict:
        return {str(k): to_plain(v, f"{what}[{k!r}]", depth + 1) for k, v in value.items()}
    raise ProbeError(f"{what} is a {type(value).__name__}, which cannot be graded")


def describe_exception(exc: BaseException, module_file: str) -> dict:
    """A short, student-readable account of an exception raised by student code."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    for frame in reversed(frames):
        if frame.filename.startswith(os.path.dirname(module_file)):
            where = f"{os.path.basename(frame.filename)}, line {frame.lineno}, in {frame.name}"
            break
    if isinstance(exc, SyntaxError) and exc.filename:
        where = f"{os.path.basename(exc.filename)}, line {exc.lineno}"
    if isinstance(exc, SystemExit):
        message = f"your code called sys.exit({exc.code!r})"
    else:
        message = str(exc)[:500]
    return {
        "type": type(exc).__name__,
        "message": message,
        "where": where,
        "not_attempted": isinstance(exc, NotImplementedError),
        "probe_error": isinstance(exc, ProbeError),
    }


def call(student, function: str, args: list, seed: int | None = None):
    """The built-in probe: call ``student.<function>(*args)``, after seeding torch if asked,
    recording its steps (``grader.sandbox.trace``)."""
    import torch

    from grader.sandbox.trace import traced

    if seed is not None:
        torch.manual_seed(seed)
    target = getattr(student, function, None)
    if target is None:
        raise ProbeError(f"your module has no function or class named {function!r}")
    return traced(target, *args)


BUILTIN_PROBES = {"call": call}


def load_reference(stem: str, path: str) -> None:
    """Load a reference module under its own stem, so that student code building on it uses it."""
    spec = importlib.util.spec_from_file_location(stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[stem] = module
    spec.loader.exec_module(module)


def load_probes(stem: str, path: str):
    """Load the probe functions for ``stem`` (grader code; no expected values in them)."""
    if not os.path.exists(path):
        return None
    spec = importlib.util.spec_from_file_location(f"_probes_{stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(channel, stem: str, sandbox_dir: str, probes_module, probes: list[dict]) -> None:
    """Import the student's ``stem`` module from ``sandbox_dir`` and run ``probes`` in order."""

    def send(event: dict) -> None:
        channel.write(wire.dumps(event) + "\n")
        channel.flush()

    module_file = os.path.join(sandbox_dir, f"{stem}.py")
    os.chdir(sandbox_dir)
    sys.path.insert(0, sandbox_dir)
    try:
        student = importlib.import_module(stem)
    except BaseException as exc:  # noqa: BLE001 - anything student code raises is reported
        send({"event": "import_error", "error": describe_exception(exc, module_file)})
        return
    send({"event": "ready"})
    for probe in probes:
        try:
            function = BUILTIN_PROBES.get(probe["probe"]) or getattr(probes_module, probe["probe"])
            kwargs = wire.decode(probe.get("kwargs", {}))
            value = to_plain(function(student, **kwargs))
            event = {"event": "result", "value": value}
        except BaseException as exc:  # noqa: BLE001
            event = {"event": "result", "error": describe_exception(exc, module_file)}
        send(event)
