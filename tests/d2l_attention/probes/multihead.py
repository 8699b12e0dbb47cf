"""Probes for multihead.py. They run INSIDE the sandbox, next to the student's code (which
imports the reference DotProductAttention as ``scoring``): inputs only, never an expected
value. Every probe builds the module right after ``torch.manual_seed(seed)``, as the
trusted tests build the reference.
"""

import torch

from grader.sandbox.trace import recording
from grader.sandbox.worker import ProbeError


def build(student, args: list, bias: bool, seed: int, train: bool = False):
    """``student.MultiHeadAttention(*args, bias=bias)`` after seeding torch, in train or eval mode."""
    cls = getattr(student, "MultiHeadAttention", None)
    if cls is None:
        raise ProbeError("your module has no class named 'MultiHeadAttention'")
    torch.manual_seed(seed)
    module = cls(*args, bias=bias)
    if not isinstance(module, torch.nn.Module):
        raise ProbeError("MultiHeadAttention should be a subclass of nn.Module")
    module.train(train)
    return module


def kept_weights(module):
    """``module.attention.attention_weights`` if it is a plain tensor, else None (a test says why)."""
    weights = getattr(getattr(module, "attention", None), "attention_weights", None)
    return weights if type(weights) is torch.Tensor else None


def attend(student, args, bias, seed, queries, keys, values, valid_lens, train=False):
    """The output of one forward call and the attention weights of its heads."""
    module = build(student, args, bias, seed, train)
    with recording(module) as recorder:
        output = module(queries, keys, values, valid_lens)
    return {"$traced": {"output": output, "weights": kept_weights(module)}, "steps": recorder.steps}


def parameters(student, args, bias, seed):
    """Names and shapes of the parameters, in the order they were created."""
    module = build(student, args, bias, seed)
    return [[name, list(p.shape)] for name, p in module.named_parameters()]


def gradients(student, args, bias, seed, queries, keys, values, valid_lens, upstream):
    """Gradients of ``(output * upstream).sum()`` for every parameter and every input (None if none)."""
    module = build(student, args, bias, seed)
    inputs = {"queries": queries, "keys": keys, "values": values}
    for tensor in inputs.values():
        tensor.requires_grad_(True)
    output = module(queries, keys, values, valid_lens)
    if not isinstance(output, torch.Tensor) or output.shape != upstream.shape:
        raise ProbeError(f"forward should return a tensor of shape {tuple(upstream.shape)}")
    if output.requires_grad:
        (output * upstream).sum().backward()
    grads = {f"parameter {name}": p.grad for name, p in module.named_parameters()}
    grads.update({name: t.grad for name, t in inputs.items()})
    return grads
