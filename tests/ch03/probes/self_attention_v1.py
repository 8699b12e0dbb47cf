"""Probes for self_attention_v1.py: build the student's SelfAttention_v1 and run it.

Runs inside the sandbox, next to student code: inputs only, never an expected value.
"""

import torch
from torch import nn

from grader.sandbox.trace import recording
from grader.sandbox.worker import ProbeError, exact_tensor

NAMES = ("W_query", "W_key", "W_value")


def build(student, seed, d_in, d_out):
    """``SelfAttention_v1(d_in, d_out)`` built right after ``torch.manual_seed(seed)``."""
    cls = getattr(student, "SelfAttention_v1", None)
    if cls is None:
        raise ProbeError("your module has no class named 'SelfAttention_v1'")
    torch.manual_seed(seed)
    return cls(d_in, d_out)


def describe(value, what):
    """What kind of object an attribute is, and for tensors their shape and values."""
    if value is None:
        return {"kind": "missing"}
    if not isinstance(value, torch.Tensor):
        return {"kind": type(value).__name__}
    return {
        "kind": "Parameter" if isinstance(value, nn.Parameter) else "Tensor",
        "shape": list(value.shape),
        "requires_grad": bool(value.requires_grad),
        "value": exact_tensor(value.detach(), what),
    }


def parameters(module):
    """The three matrices as attributes, and every registered parameter's name and shape."""
    return {
        "attributes": {name: describe(getattr(module, name, None), name) for name in NAMES},
        "named": [[name, list(p.shape)] for name, p in module.named_parameters()],
    }


def forward(student, seed, d_in, d_out, xs):
    """Build the module once, describe its parameters, and apply it to each input in ``xs``
    (recording the steps of each forward pass)."""
    module = build(student, seed, d_in, d_out)
    params = parameters(module)
    with recording(module) as recorder:
        outs = [module(x) for x in xs]
    return {"$traced": {"params": params, "outs": outs}, "steps": recorder.steps}


def gradients(student, seed, d_in, d_out, x):
    """Back-propagate ``(module(x) ** 2).sum()``; say which parameters received a non-zero gradient."""
    module = build(student, seed, d_in, d_out)
    out = module(x)
    if not isinstance(out, torch.Tensor):
        raise ProbeError(f"forward should return a torch.Tensor, but it returned a {type(out).__name__}")
    loss = (out.float() ** 2).sum()
    if loss.requires_grad:
        loss.backward()

    def reached(p):
        return isinstance(p, torch.Tensor) and p.grad is not None and bool(p.grad.abs().sum() > 0)

    return {
        "output_requires_grad": bool(loss.requires_grad),
        "attributes": {name: reached(getattr(module, name, None)) for name in NAMES},
        "parameters": {name: reached(p) for name, p in module.named_parameters()},
    }
