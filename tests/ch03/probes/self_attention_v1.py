"""Probes for self_attention_v1.py: build the student's SelfAttention_v1 and run it.

Runs inside the sandbox, next to student code: inputs only, never an expected value.
"""

import torch
from torch import nn

from grader.sandbox import probing

NAMES = ("W_query", "W_key", "W_value")


def build(student, seed, d_in, d_out):
    """``SelfAttention_v1(d_in, d_out)`` built right after ``torch.manual_seed(seed)``."""
    return probing.build(student, "SelfAttention_v1", d_in, d_out, seed=seed)


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
        "value": probing.tensor(value.detach(), what),
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
    return probing.on_each(module, xs, params=parameters(module))


def gradients(student, seed, d_in, d_out, x):
    """Back-propagate ``(module(x) ** 2).sum()``; say which parameters received a non-zero gradient."""
    module = build(student, seed, d_in, d_out)
    watched = {name: getattr(module, name, None) for name in NAMES}
    found = probing.reach(module, x, watched)
    found["gradients"] = {name: probing.tensor_or_none(getattr(value, "grad", None)) for name, value in watched.items()}
    return found
