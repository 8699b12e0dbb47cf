"""Record the steps of a computation, so the grader can find the first one that differs.

Used by probes (inside the sandbox, around student code) and, identically, by the trusted
process around the reference and the catalog's mistakes. :func:`traced` runs a call under a
``TorchFunctionMode`` that notes the result (a tensor of any dtype) of every torch function (whatever
the import style: ``torch.softmax``, ``F.softmax``, ``x.softmax``, ``from torch import
softmax``, ``@``), the input of every softmax and dropout, and, through forward hooks, what
each named submodule returns (``W_query``, ``out_proj``, ...). Matmuls with a parameter of
the module are labelled with that parameter's name (``x @ W_query``); the names come from the
module's structure (:mod:`grader.sandbox.module_names`).

Each step also notes where the student's code computed it: the line number in the innermost
frame of a file of the folder set by :func:`student_files` (the submission's, in the sandbox),
else 0 (in another file than the diagnosed module's: also the line of that module that called
into it); and what it was computed from: the earlier steps among its arguments (followed through
the calls that are not kept, such as a ``.T``), the module's own tensors among them
(``"W_query"`` for ``self.W_query`` or its weight, ``"P"`` for a table ``self.P``), and
``"__outside__"`` for a tensor from outside the recording (the probe's input). A step
is ``[label, tensor, [file name, line], [parents]]`` (the file name relative to that folder; a
parent is a step's index or an attribute's name); the grader reads the line's code from its own
copy of the submission, never from the sandbox. In-place changes (``x.mul_(m)``, ``P[:, 0::2] =
...``) are steps too: the tensor's value after the change, computed from its value before.

What it returns is plain data: ``{"$traced": value, "steps": [[label, tensor, where], ...]}``,
which the grading plugin splits again (the test sees ``value``). Only small tensors are kept.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import weakref

import torch
from torch.overrides import TorchFunctionMode

from grader.sandbox import module_names

MAX_STEPS = 480  # steps kept per call
MAX_ELEMENTS = 4096  # largest tensor kept as a step
MATMULS = frozenset({"matmul", "__matmul__", "__rmatmul__", "bmm", "mm", "einsum"})
KEPT_DTYPES = frozenset({torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
                         torch.uint8, torch.bool})  # what may cross the sandbox's border (wire.DTYPES)
OUTSIDE = "__outside__"  # a parent that is a tensor from outside the recording (a probe's input)
INPUT_OF = frozenset({"softmax", "_softmax", "dropout"})  # also keep what these receive


_student_dir: str | None = None  # the folder whose files are the student's (see student_files)
_student_file: str | None = None  # the diagnosed module's file, whose calling lines are noted too (see student_files)


@contextlib.contextmanager
def student_files(folder: str | None, stem: str | None = None):
    """Within the block, steps note the line of the innermost frame of a file in ``folder``; with
    ``stem``, a step made in another of those files (their own ``masked_softmax.py``, which the
    public check runs where the hidden grade runs the reference's) also notes the line of
    ``stem``.py that called into it, the one the hidden grade notes (see :func:`where_computed`)."""
    global _student_dir, _student_file
    before = _student_dir, _student_file
    _student_dir = os.path.join(os.path.abspath(folder), "") if folder else None
    _student_file = os.path.join(_student_dir, f"{stem}.py") if _student_dir and stem else None
    try:
        yield
    finally:
        _student_dir, _student_file = before


def _is_students(name: str) -> bool:
    """Whether a frame's file name is one of the student's files (see :func:`student_files`)."""
    return _student_dir is not None and (name.startswith(_student_dir) or os.path.abspath(name).startswith(_student_dir))


def where_computed() -> list:
    """``[file name, line, calling line]`` of the innermost frame of the student's files (the
    calling line: where the next frame out, in the same file, called it; else 0), else ``["", 0, 0]``;
    for a frame of another file than the diagnosed module's (:func:`student_files`' ``stem``), a
    fourth number: the line of the innermost frame of the diagnosed module's file (0: none)."""
    if _student_dir is None:
        return ["", 0, 0]
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if _is_students(name):
            caller = frame.f_back
            calling = caller.f_lineno if caller is not None and caller.f_code.co_filename == name else 0
            where = [os.path.relpath(name, _student_dir)[:100], frame.f_lineno, calling]
            if _student_file is not None and os.path.abspath(name) != _student_file:
                outer = caller
                while outer is not None and os.path.abspath(outer.f_code.co_filename) != _student_file:
                    outer = outer.f_back
                where.append(outer.f_lineno if outer is not None else 0)
            return where
        frame = frame.f_back
    return ["", 0, 0]


class Recorder(TorchFunctionMode):
    """Note the result of every torch function called while active (see the module docstring)."""

    def __init__(self, parameters: dict[int, str] | None = None, attributes: dict[int, tuple] | None = None):
        super().__init__()
        self.steps: list[list] = []
        self.parameters = parameters or {}
        self.busy = False  # keeping a step: its own copies are not steps
        # id(tensor) -> (a weak reference to it, what it was computed from: step indices, attribute names)
        self.made: dict[int, tuple] = {}
        for key, (tensor_, name) in (attributes or {}).items():
            self.made[key] = (weakref.ref(tensor_), (name,))
        # What the call that raised was computed from (for an error: where its wrong shape came from).
        self.raised_from: tuple = ()
        self.numbers: list[list] = []  # see Numbers

    def sources(self, value, depth: int = 0) -> set:
        """The steps and attributes ``value`` (a tensor, or a list or tuple of them) was computed from."""
        if isinstance(value, torch.Tensor):
            entry = self.made.get(id(value))
            return set(entry[1]) if entry is not None and entry[0]() is value else {OUTSIDE}
        if isinstance(value, (list, tuple)) and depth < 2:
            found = set()
            for item in value[:64]:
                found |= self.sources(item, depth + 1)
            return found
        return set()

    def note(self, value, parents) -> None:
        """Remember that ``value`` was computed from ``parents``."""
        if isinstance(value, torch.Tensor):
            try:
                self.made[id(value)] = (weakref.ref(value), tuple(parents))
            except TypeError:  # a tensor that takes no weak reference
                pass

    def keep(self, label: str, value, parents=()) -> int | None:
        """Keep ``value`` as a step called ``label`` if it is a small tensor (floating point, or a
        mask or lengths: bool and integers); its index."""
        if (len(self.steps) < MAX_STEPS and isinstance(value, torch.Tensor) and value.dtype in KEPT_DTYPES
                and 0 < value.numel() <= MAX_ELEMENTS and value.layout == torch.strided):
            self.busy = True
            try:
                copy = value.detach().clone()
                self.steps.append([label, copy if type(copy) is torch.Tensor else copy.as_subclass(torch.Tensor),
                                   where_computed(), sorted(parents, key=str)[:16]])
            finally:
                self.busy = False
            return len(self.steps) - 1
        return None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "") or str(func)
        if self.busy:
            return func(*args, **kwargs)
        parents = self.sources(list(args) + list(kwargs.values()))
        try:
            result = func(*args, **kwargs)
        except BaseException:
            self.raised_from = tuple(parents)
            raise
        self.raised_from = ()  # an error caught by the code that called it is not the one that leaves
        if name in ("__get__", "__set__"):  # .T, .data, .shape: the same values, followed through
            self.note(result, parents)
            return result
        if name in INPUT_OF and args:
            self.keep(f"{name} input", args[0], self.sources(args[0]))
        if name in MATMULS:
            for arg in args:
                if id(arg) in self.parameters:
                    name = f"x @ {self.parameters[id(arg)]}"
        if name == "__setitem__" and args and isinstance(args[0], torch.Tensor):
            result_tensor = args[0]  # the tensor after the change, from its value before and what was put in
        else:
            result_tensor = result
        if isinstance(result_tensor, tuple) and 0 < len(result_tensor) <= 4:  # a GRU's output and state
            for k, item in enumerate(result_tensor):
                index = self.keep(f"{name}[{k}]", item, parents)
                self.note(item, (index,) if index is not None else parents)
            return result
        if isinstance(result_tensor, tuple):  # unbind (a loop over a tensor's rows), split, chunk: not kept,
            for item in result_tensor[:1024]:  # but each piece is computed from what the tensor was
                self.note(item, parents)
            return result
        index = self.keep(name, result_tensor, parents)
        self.note(result_tensor, (index,) if index is not None else parents)
        return result


MAX_NUMBERS = 400  # Python numbers kept per call


class Numbers:
    """Note each Python number (an int or a float) that a line of the student's files assigns to a
    local name, as ``[name, value, [file name, line, 0]]``, in the order the lines run: what a
    computation done without tensors (BLEU's counts and precisions) is made of. Only frames of
    the student's files are followed (``sys.settrace`` asks nothing of any other frame)."""

    def __init__(self):
        self.found: list[list] = []
        self.state: dict[int, tuple[dict, int]] = {}  # frame -> (its numbers after the last line, that line)

    def call(self, frame, event, arg):
        if event != "call" or _student_dir is None or len(self.found) >= MAX_NUMBERS:
            return None
        if not _is_students(frame.f_code.co_filename):
            return None
        self.state[id(frame)] = (_numbers_in(frame), frame.f_lineno)  # its arguments: given, not computed
        return self.line

    def line(self, frame, event, arg):
        if event not in ("line", "return"):
            return self.line
        try:  # never let the tracer change what the student's code does
            before, line = self.state.get(id(frame), ({}, frame.f_lineno))
            now = _numbers_in(frame)
            where = [os.path.relpath(frame.f_code.co_filename, _student_dir or "")[:100], line, 0]
            for key, value in now.items():
                if len(self.found) < MAX_NUMBERS and (key not in before or before[key] != value):
                    self.found.append([str(key)[:40], float(value), where])
            if event == "return":
                self.state.pop(id(frame), None)
            else:
                self.state[id(frame)] = (now, frame.f_lineno)
        except Exception:  # noqa: BLE001, S110 - a note lost, nothing else
            pass
        return self.line


def _numbers_in(frame) -> dict:
    try:
        return {k: v for k, v in list(frame.f_locals.items())[:64]
                if (type(v) is int and abs(v) < 2 ** 53) or (type(v) is float and math.isfinite(v))}
    except Exception:  # noqa: BLE001 - locals of the student's making
        return {}


@contextlib.contextmanager
def recording(module=None, numbers: bool = False):
    """Record the steps of what runs inside the block; yields the :class:`Recorder`. With
    ``numbers``, also the Python numbers the student's lines assign (its ``numbers``, see
    :class:`Numbers`): a line tracer, which slows every Python call made in the block (torch's
    own included) several times over, so only a diagnosis's re-run asks for it."""
    recorder = Recorder(module_names.parameter_names(module), module_names.attributes_of(module))
    handles = module_names.submodule_hooks(module, recorder)
    tracer, before = Numbers(), sys.gettrace()
    recorder.numbers = tracer.found
    try:
        with recorder:
            if numbers:
                sys.settrace(tracer.call)
            try:
                yield recorder
            finally:
                if numbers:
                    sys.settrace(before)
    finally:
        for handle in handles:
            handle.remove()


def traced(function, *args, module=None, **kwargs):
    """``function(*args, **kwargs)`` and its steps, as ``{"$traced": result, "steps": [...]}``."""
    with recording(module) as recorder:
        result = function(*args, **kwargs)
    return {"$traced": result, "steps": recorder.steps}
