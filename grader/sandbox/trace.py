"""Record the steps of a computation, so the grader can find the first one that differs.

Used by probes (inside the sandbox, around student code) and, identically, by the trusted
process around the reference and the catalog's mistakes. :func:`traced` runs a call under a
``TorchFunctionMode`` that notes the floating-point result of every torch function (whatever
the import style: ``torch.softmax``, ``F.softmax``, ``x.softmax``, ``from torch import
softmax``, ``@``), the input of every softmax and dropout, and, through forward hooks, what
each named submodule returns (``W_query``, ``out_proj``, ...). Matmuls with a parameter of
the module are labelled with that parameter's name (``x @ W_query``).

Each step also notes where the student's code computed it: the line number in the innermost
frame of a file of the folder set by :func:`student_files` (the submission's, in the sandbox),
else 0. A step is ``[label, tensor, [file name, line]]`` (the file name relative to that folder);
the grader reads the line's code from its own copy of the submission, never from the sandbox.

What it returns is plain data: ``{"$traced": value, "steps": [[label, tensor, where], ...]}``,
which the grading plugin splits again (the test sees ``value``). Only small tensors are kept.
"""

from __future__ import annotations

import contextlib
import os
import sys

import torch
from torch.overrides import TorchFunctionMode

MAX_STEPS = 160  # steps kept per call
MAX_ELEMENTS = 4096  # largest tensor kept as a step
MATMULS = frozenset({"matmul", "__matmul__", "__rmatmul__", "bmm", "mm", "einsum"})
INPUT_OF = frozenset({"softmax", "_softmax", "dropout"})  # also keep what these receive


_student_dir: str | None = None  # the folder whose files are the student's (see student_files)


@contextlib.contextmanager
def student_files(folder: str | None):
    """Within the block, steps note the line of the innermost frame of a file in ``folder``."""
    global _student_dir
    before = _student_dir
    _student_dir = os.path.join(os.path.abspath(folder), "") if folder else None
    try:
        yield
    finally:
        _student_dir = before


def where_computed() -> list:
    """``[file name, line]`` of the innermost frame of the student's files, else ``["", 0]``."""
    if _student_dir is None:
        return ["", 0]
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(_student_dir) or os.path.abspath(name).startswith(_student_dir):
            return [os.path.relpath(name, _student_dir)[:100], frame.f_lineno]
        frame = frame.f_back
    return ["", 0]


class Recorder(TorchFunctionMode):
    """Note the result of every torch function called while active (see the module docstring)."""

    def __init__(self, parameters: dict[int, str] | None = None):
        super().__init__()
        self.steps: list[list] = []
        self.parameters = parameters or {}
        self.busy = False  # keeping a step: its own copies are not steps

    def keep(self, label: str, value) -> None:
        """Keep ``value`` as a step called ``label`` if it is a small floating-point tensor."""
        if (len(self.steps) < MAX_STEPS and isinstance(value, torch.Tensor) and value.is_floating_point()
                and 0 < value.numel() <= MAX_ELEMENTS):
            self.busy = True
            try:
                copy = value.detach().clone()
                self.steps.append([label, copy if type(copy) is torch.Tensor else copy.as_subclass(torch.Tensor),
                                   where_computed()])
            finally:
                self.busy = False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        name = getattr(func, "__name__", "") or str(func)
        if self.busy or name in ("__get__", "__set__"):
            return result
        if name in INPUT_OF and args:
            self.keep(f"{name} input", args[0])
        if name in MATMULS:
            for arg in args:
                if id(arg) in self.parameters:
                    name = f"x @ {self.parameters[id(arg)]}"
        self.keep(name, result)
        return result


def _hooks(module, recorder: Recorder) -> list:
    """Forward hooks that note what every named submodule receives (first input) and returns."""
    handles = []
    if not isinstance(module, torch.nn.Module):
        return handles
    for name, sub in module.named_modules():
        if not name:
            continue
        short = name.rsplit(".", 1)[-1]

        def hook(_mod, inputs, output, short=short):
            if inputs and isinstance(inputs[0], torch.Tensor):
                recorder.keep(f"{short} input", inputs[0])
            recorder.keep(short, output)

        handles.append(sub.register_forward_hook(hook))
    return handles


@contextlib.contextmanager
def recording(module=None):
    """Record the steps of what runs inside the block; yields the :class:`Recorder`."""
    parameters = {}
    if isinstance(module, torch.nn.Module):
        parameters = {id(p): name.rsplit(".", 1)[-1] for name, p in module.named_parameters()}
    recorder = Recorder(parameters)
    handles = _hooks(module, recorder)
    try:
        with recorder:
            yield recorder
    finally:
        for handle in handles:
            handle.remove()


def traced(function, *args, module=None, **kwargs):
    """``function(*args, **kwargs)`` and its steps, as ``{"$traced": result, "steps": [...]}``."""
    with recording(module) as recorder:
        result = function(*args, **kwargs)
    return {"$traced": result, "steps": recorder.steps}
