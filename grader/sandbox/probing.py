"""The probing API: what the probes of a grading suite import (hidden and public suites alike).

A probe is a function ``probe(student, **kwargs) -> plain data`` in
``tests/<assignment>/probes/<stem>.py``. It runs inside the sandbox, next to the student's module
``student``; it holds inputs, never an expected value. What it returns (numbers, strings, lists,
dicts, exact ``torch.Tensor``s) goes back to the trusted tests, which compare it::

    from grader.sandbox import probing

    def forward(student, seed, args, x, train=False):
        module = probing.build(student, "CausalAttention", *args, seed=seed, train=train)
        return probing.traced(module, x)          # the output, and the steps it took

**Whose fault.** An exception that leaves a probe is the student's when it went through the
student's module (a frame of theirs is in its traceback), when it left a block run under
:func:`student_code` (every helper here that calls into student code uses it), or when it is a
:class:`ProbeError` (the probe's message for a result that cannot be graded). Anything else is a
bug of the probe itself: the grader reports it as a grader error, never as the student's
(:mod:`grader.sandbox.fault` decides; its ``ProbeError``, ``student_code``, ``caught`` and ``explain`` are
part of this API).
"""

from __future__ import annotations

import contextlib
import importlib.util
from pathlib import Path

import torch

from grader.sandbox import protocol, seeding
from grader.sandbox.failure_shapes import SHAPES, shapes_text
from grader.sandbox.fault import ProbeError, caught, explain, student_code  # noqa: F401 - part of the probing API
from grader.sandbox.linear_layers import linear_layers_fixed, linear_layers_uninitialized
from grader.sandbox.trace import recording


# -- reaching and building the student's code ----------------------------------------------------------
def part(student, name: str, kind: str = "function or class"):
    """``student.<name>``, or a ProbeError saying the module has no such function or class."""
    with student_code():
        found = getattr(student, name, None)
    if found is None:
        raise ProbeError(f"your module has no {kind} named {name!r}")
    return found


def call(function, *args, **kwargs):
    """``function(*args, **kwargs)``: a call into student code (its exceptions are the student's)."""
    with student_code():
        return function(*args, **kwargs)


def build(student, name: str, *args, seed: int | None = None, train: bool | None = None, kwargs: dict | None = None,
          kind: str = "class", initialize: bool = True, fixed: bool = False):
    """``student.<name>(*args, **kwargs)`` built right after ``torch.manual_seed(seed)`` (if
    given), as the trusted tests build the reference: an ``nn.Module`` (``name`` is a class, or a
    function returning one: ``kind="function"``), set to training or eval mode when ``train`` is given.

    ``initialize=False`` is for a probe that reads only the module's configuration (shapes,
    counts, settings), never a value: its ``nn.Linear`` layers then keep their uninitialised
    memory instead of drawing random weights (about 20 ms for a GPT-2-size attention module).
    ``fixed=True`` is for one that reads values of a module too large to draw its weights at every
    run: its ``nn.Linear`` layers take fixed numbers instead (:func:`linear_layers_fixed`); build the
    reference the same way."""
    factory = part(student, name, kind)
    if seed is not None:
        seeding.seed(seed)
    layers = linear_layers_fixed() if fixed else contextlib.nullcontext() if initialize else linear_layers_uninitialized()
    with layers:
        module = call(factory, *args, **(kwargs or {}))
    if not isinstance(module, torch.nn.Module):
        if kind == "class":
            raise ProbeError(f"{name} should be a subclass of nn.Module")
        raise ProbeError(f"{name} returned a {type(module).__name__}, not a module")
    if train is not None:
        call(module.train, train)
    return module


def seed(value: int) -> None:
    """``torch.manual_seed(value)`` for a probe: the same random numbers, without the cost of queuing a
    seeding of every absent accelerator (:mod:`grader.sandbox.seeding`). Student code's own torch is untouched."""
    seeding.seed(value)


def sibling(probe_file: str, stem: str):
    """The probes of another module of the same suite (``sibling(__file__, "causal")``)."""
    spec = importlib.util.spec_from_file_location(f"_probes_sibling_{stem}", Path(probe_file).with_name(f"{stem}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- what comes back ---------------------------------------------------------------------------------------
def tensor(value, what: str) -> torch.Tensor:
    """A copy of ``value`` if it is exactly a ``torch.Tensor`` (not a subclass), else a ProbeError."""
    if type(value) is torch.Tensor:
        return value.detach().clone()
    if isinstance(value, torch.Tensor):
        raise ProbeError(f"{what} is a {type(value).__name__}, a subclass of torch.Tensor; return a plain torch.Tensor")
    raise ProbeError(f"{what} should be a torch.Tensor, but it is a {type(value).__name__}")


def tensor_or_none(value):
    """``value`` if it is exactly a ``torch.Tensor``, else None (the test says what is missing)."""
    return value if type(value) is torch.Tensor else None


def int_or_none(value):
    """``value`` if it is exactly an ``int``, else None."""
    return value if type(value) is int else None


def output(module, *inputs, what: str = "the output of forward") -> torch.Tensor:
    """``module(*inputs)``, which must be exactly a tensor."""
    return tensor(call(module, *inputs), what)


# -- the steps of a computation ---------------------------------------------------------------------------
_sending_steps = True  # whether a traced value carries its steps (see sending_steps)


@contextlib.contextmanager
def sending_steps(wanted: bool):
    """Within the block, traced values carry their steps only if ``wanted``. Only a diagnosis
    reads them, so the graded run goes without (the worker says which; the trusted side keeps them)."""
    global _sending_steps
    before, _sending_steps = _sending_steps, wanted
    try:
        yield
    finally:
        _sending_steps = before


@contextlib.contextmanager
def recorded(module=None, numbers: bool = False):
    """Record the steps of the student code run in the block (``grader.sandbox.trace``; with
    ``numbers``, the Python numbers its lines assign too); yields the recorder. Exceptions that
    leave the block are the student's."""
    with recording(module, numbers=numbers) as recorder, student_code():
        try:
            yield recorder
        except BaseException as exc:
            if _sending_steps:  # where the shapes went wrong before it raised (for the diagnosis)
                with contextlib.suppress(Exception):
                    setattr(exc, SHAPES, shapes_text(recorder.steps, recorder.raised_from))
            raise


@contextlib.contextmanager
def recorded_if_sent(module=None, numbers: bool = False):
    """:func:`recorded`, where the steps are sent; elsewhere student code alone (yields None). For a
    probe that records only to hand the steps to :func:`with_steps`: the graded run, which sends
    none, then records nothing. (A probe that reads the steps itself, as the softmax spy does,
    uses :func:`recorded`.) ``numbers``: also the Python numbers the student's lines assign, for a
    computation without tensors (BLEU), whose steps would say nothing."""
    if _sending_steps:
        with recorded(module, numbers=numbers) as recorder:
            yield recorder
    else:
        with student_code():
            yield None


def with_steps(value, recorder) -> dict:
    """A probe's result that carries the recorded steps (the test sees only ``value``); without
    them where steps are not sent (:func:`sending_steps`)."""
    if recorder is None or not _sending_steps:
        return protocol.traced(value)
    if getattr(recorder, "numbers", None) and not recorder.steps:  # a computation without tensors (BLEU)
        return protocol.traced(value, recorder.steps, recorder.numbers)
    return protocol.traced(value, recorder.steps)


def traced(module, *inputs, what: str = "the output of forward") -> dict:
    """``module(*inputs)`` (exactly a tensor) with the steps it took."""
    with recorded_if_sent(module) as recorder:
        out = module(*inputs)
    return with_steps(tensor(out, what), recorder)


def on_each(module, inputs: list, **alongside) -> dict:
    """``module(x)`` for every ``x`` of ``inputs`` (``"outs"``, with the steps of them all), and
    ``alongside`` (what the probe noted before, e.g. the module's parameters)."""
    with recorded_if_sent(module) as recorder:
        outs = [module(x) for x in inputs]
    return with_steps({**alongside, "outs": outs}, recorder)


def softmax_weights(steps, n: int, which: str = "softmax", dims: int | None = None):
    """The last recorded ``which`` step ("softmax", or "softmax input" for the scores softmax
    received) ending in ``(n, n)``, with ``dims`` dimensions if given; None if there is none (a
    softmax written by hand)."""
    for label, t, *_ in reversed(steps):
        if label == which and t.dim() >= 2 and tuple(t.shape[-2:]) == (n, n) and (dims is None or t.dim() == dims):
            return t
    return None


# -- gradients ------------------------------------------------------------------------------------------------
def backward(output, upstream: torch.Tensor | None = None, what: str = "forward") -> None:
    """Back-propagate ``(output * upstream).sum()`` (``upstream`` defaults to evenly spaced
    weights from -1 to 1), if the output has a graph at all."""
    if not isinstance(output, torch.Tensor):
        raise ProbeError(f"{what} returned a {type(output).__name__}, not a tensor")
    if upstream is None:
        upstream = torch.linspace(-1.0, 1.0, output.numel()).reshape(output.shape)
    elif output.shape != upstream.shape:
        raise ProbeError(f"{what} should return a tensor of shape {tuple(upstream.shape)}")
    with student_code():
        if output.requires_grad:
            (output * upstream).sum().backward()


def gradients(named, prefix: str = "") -> dict:
    """``{prefix + name: its gradient or None}`` of ``named`` (a module's parameters, or a dict
    of input tensors)."""
    items = named.named_parameters() if isinstance(named, torch.nn.Module) else named.items()
    return {f"{prefix}{name}": (t.grad.detach().clone() if t.grad is not None else None) for name, t in items}


def gradients_through(module, run, inputs: dict, upstream: torch.Tensor) -> dict:
    """Gradients of ``(run() * upstream).sum()`` (``run`` calls the student's ``module`` on
    ``inputs``) for every parameter (``"parameter <name>"``) and every input, None where none reached."""
    for value in inputs.values():
        value.requires_grad_(True)
    backward(call(run), upstream)
    return {**gradients(module, prefix="parameter "), **gradients(inputs)}


def train_then_clear(module, run, inputs: dict, upstream: torch.Tensor, seed: int) -> None:
    """A forward and backward pass of ``run()`` in training mode (dropout active, after
    ``torch.manual_seed(seed)``), then every gradient cleared and the module back in eval mode:
    what dropout does in place must not break backward (with a rate above 0 only)."""
    for value in inputs.values():
        value.requires_grad_(True)
    call(module.train)
    seeding.seed(seed)
    backward(call(run), upstream)
    with student_code():
        for value in [*module.parameters(), *inputs.values()]:
            value.grad = None
    call(module.eval)


def attribute(value, dotted: str):
    """``value.a.b`` for ``dotted="a.b"``, or None where an attribute is missing or its property
    fails (the test says what is missing); not attempted yet (NotImplementedError) still raises."""
    for name in dotted.split("."):
        try:
            with student_code():
                value = getattr(value, name, None)
        except NotImplementedError:
            raise
        except Exception:  # noqa: BLE001 - a broken property counts as missing
            return None
    return value


def reached(value) -> bool:
    """Whether a non-zero gradient reached ``value`` (a tensor; anything else: no)."""
    return isinstance(value, torch.Tensor) and value.grad is not None and bool(value.grad.abs().sum() > 0)


def reach(module, x, watched: dict) -> dict:
    """Back-propagate ``(module(x) ** 2).sum()``; whether a non-zero gradient reached each of
    ``watched`` (name: tensor of the module) and each registered parameter."""
    out = call(module, x)
    if not isinstance(out, torch.Tensor):
        raise ProbeError(f"forward should return a torch.Tensor, but it returned a {type(out).__name__}")
    with student_code():
        loss = (out.float() ** 2).sum()
        if loss.requires_grad:
            loss.backward()
    return {
        "output_requires_grad": bool(loss.requires_grad),
        "attributes": {name: reached(value) for name, value in watched.items()},
        "parameters": {name: reached(p) for name, p in module.named_parameters()},
    }


def call_function(student, function: str, args: list, seed: int | None = None):
    """The built-in probe of ``@calls(...)``: ``student.<function>(*args)``, after seeding torch
    if asked, with its steps."""
    target = part(student, function)
    if seed is not None:
        seeding.seed(seed)
    plain = not any(isinstance(arg, torch.Tensor) for arg in args)  # a computation on plain data: its numbers
    with recorded_if_sent(numbers=plain) as recorder:
        result = target(*args)
    return with_steps(result, recorder)
