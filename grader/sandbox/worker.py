"""Runs inside the sandboxed process, next to student code: import one module, run its probes.

Nothing here is trusted by the grader. The worker writes one JSON line per event to its
result channel: ``ready`` (or ``import_error``), then one ``result`` per probe, in the order
of the plan. The zygote times each line and ``wire.decode`` validates what it carries.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import sys

from grader.sandbox import failure_shapes, probing, trace
from grader.sandbox.fault import ProbeError, describe_exception
from grader.sandbox import wire
from grader.sandbox.protocol import ProbeCall


def to_plain(value, what: str = "the result"):
    """Convert what a probe returns into plain data; tensors must be exact torch.Tensors. (Each
    part's name, ``the result['out'][2]``, is spelled out only for an error: a result holds
    hundreds of parts.)"""
    import torch

    def plain(value, where, depth: int):
        kind = type(value)
        if depth > 8:
            raise ProbeError(f"{named(where)} is nested too deeply")
        if kind is torch.Tensor:
            return wire.encode_tensor(value)
        if value is None or kind in (bool, int, float, str):
            return value
        if kind in (list, tuple):
            return [plain(v, (where, i), depth + 1) for i, v in enumerate(value)]
        if kind is dict:
            return {str(k): plain(v, (where, repr(k)), depth + 1) for k, v in value.items()}
        if isinstance(value, torch.Tensor):
            probing.tensor(value, named(where))  # says which subclass it is
        raise ProbeError(f"{named(where)} is a {kind.__name__}, which cannot be graded")

    return plain(value, what, 0)


def named(where) -> str:
    """``"the result['out'][2]"`` from ``(("the result", "'out'"), 2)``."""
    if type(where) is not tuple:
        return where
    parent, key = where
    return f"{named(parent)}[{key}]"


BUILTIN_PROBES = {"call": probing.call_function}


def load_reference(stem: str, path: str) -> None:
    """Load a reference module under its own stem, so that student code building on it uses it."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        load_reference_from(stem, path, fd)
    finally:
        os.close(fd)


class _Source(importlib.abc.Loader):
    """Executes a module's source read already (from a descriptor: the file may not be visible)."""

    def __init__(self, source: bytes):
        self.source = source

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        source, self.source = self.source, b""  # not kept beside the module (its __loader__) for student code to print
        # dont_inherit: compiled as the file itself says (not under this module's __future__ imports)
        exec(compile(source, module.__spec__.origin, "exec", dont_inherit=True), module.__dict__)  # noqa: S102


def load_reference_from(stem: str, path: str, fd: int) -> None:
    """:func:`load_reference`, the file read from ``fd`` (opened before the box hid ``path``)."""
    chunks, offset = [], 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    spec = importlib.util.spec_from_file_location(stem, path, loader=_Source(b"".join(chunks)))
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


def run(channel, stem: str, sandbox_dir: str, probes_module, probes: list[ProbeCall], *, steps: bool = True) -> None:
    """Import the student's ``stem`` module from ``sandbox_dir`` and run ``probes`` in order.

    ``steps``: send the recorded steps of traced probes (``{"$traced": value, "steps": [...]}``);
    without them a traced value is sent as ``{"$traced": value}`` (``probing.sending_steps``). Only
    a diagnosis reads steps, so a plan asks for them only when a module failed
    (``GradingPlugin.add_steps``).
    """

    def send(event: dict) -> None:
        channel.write(wire.dumps(event) + "\n")
        channel.flush()

    os.chdir(sandbox_dir)
    sys.path.insert(0, sandbox_dir)
    try:
        student = importlib.import_module(stem)
    except BaseException as exc:  # noqa: BLE001 - anything student code raises is reported
        error = describe_exception(exc, sandbox_dir)
        error.pop("grader_fault", None)  # importing runs only the student's module
        send({"event": "import_error", "error": error})
        return
    send({"event": "ready"})
    for probe in probes:
        try:
            function = BUILTIN_PROBES.get(probe.probe) or getattr(probes_module, probe.probe)
            kwargs = wire.decode(probe.kwargs)
            with probing.sending_steps(steps), trace.student_files(sandbox_dir, stem):
                value = to_plain(function(student, **kwargs))
            event = {"event": "result", "value": value}
        except BaseException as exc:  # noqa: BLE001
            # Whose fault: the student's (their code raised) or the probe's own bug (grader_fault).
            event = {"event": "result", "error": describe_exception(exc, sandbox_dir)}
            if steps and (shapes := failure_shapes.shapes_of_failure(exc)):  # where its shapes left the reference's
                event["error"]["shapes"] = shapes
        send(event)
