"""Probes for scoring.py. They run INSIDE the sandbox, next to the student's code: inputs
only, never an expected value. Every probe builds its scorer right after
``torch.manual_seed(seed)``, as the trusted tests build the reference.
"""

import torch

from grader.sandbox.trace import recording
from grader.sandbox.worker import ProbeError

SCORERS = ("AdditiveAttention", "DotProductAttention")


def build(student, scorer: str, args: list, seed: int, train: bool = False):
    """``student.<scorer>(*args)`` after seeding torch, in train or eval mode."""
    if scorer not in SCORERS:
        raise ProbeError(f"unknown scorer {scorer!r}")
    cls = getattr(student, scorer, None)
    if cls is None:
        raise ProbeError(f"your module has no class named {scorer!r}")
    torch.manual_seed(seed)
    module = cls(*args)
    if not isinstance(module, torch.nn.Module):
        raise ProbeError(f"{scorer} should be a subclass of nn.Module")
    module.train(train)
    return module


def run(module, queries, keys, values, valid_lens):
    """One forward call; without valid lengths, rely on the default ``valid_lens=None``."""
    if valid_lens is None:
        return module(queries, keys, values)
    return module(queries, keys, values, valid_lens)


def kept_weights(module):
    """``module.attention_weights`` if it is a plain tensor, else None (a test says why)."""
    weights = getattr(module, "attention_weights", None)
    return weights if type(weights) is torch.Tensor else None


def attend(student, scorer, args, seed, queries, keys, values, valid_lens=None, train=False):
    """The output of one forward call and the attention weights kept on the module."""
    module = build(student, scorer, args, seed, train)
    with recording(module) as recorder:
        output = run(module, queries, keys, values, valid_lens)
    return {"$traced": {"output": output, "weights": kept_weights(module)}, "steps": recorder.steps}


def gradients(student, scorer, args, seed, queries, keys, values, valid_lens, upstream):
    """Gradients of ``(output * upstream).sum()`` for every parameter and every input (None if none)."""
    module = build(student, scorer, args, seed)
    inputs = {"queries": queries, "keys": keys, "values": values}
    for tensor in inputs.values():
        tensor.requires_grad_(True)
    output = run(module, queries, keys, values, valid_lens)
    if not isinstance(output, torch.Tensor) or output.shape != upstream.shape:
        raise ProbeError(f"forward should return a tensor of shape {tuple(upstream.shape)}")
    if output.requires_grad:
        (output * upstream).sum().backward()
    grads = {f"parameter {name}": p.grad for name, p in module.named_parameters()}
    grads.update({name: t.grad for name, t in inputs.items()})
    return grads
