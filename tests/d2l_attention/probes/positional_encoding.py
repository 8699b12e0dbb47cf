"""Probes for positional_encoding.py. They run INSIDE the sandbox, next to the student's
code: inputs only, never an expected value.
"""

import torch

from grader.sandbox.trace import recording
from grader.sandbox.worker import ProbeError


def build(student, args: list, train: bool = False, seed: int = 0):
    """``student.PositionalEncoding(*args)`` after seeding torch, in train or eval mode."""
    cls = getattr(student, "PositionalEncoding", None)
    if cls is None:
        raise ProbeError("your module has no class named 'PositionalEncoding'")
    torch.manual_seed(seed)
    module = cls(*args)
    if not isinstance(module, torch.nn.Module):
        raise ProbeError("PositionalEncoding should be a subclass of nn.Module")
    module.train(train)
    return module


def table(student, args):
    """The position table ``self.P`` (a parameter or buffer is read as a plain tensor)."""
    P = getattr(build(student, args), "P", None)
    if not isinstance(P, torch.Tensor):
        raise ProbeError("PositionalEncoding should keep its table as a tensor in self.P")
    return P.detach()


def encode(student, args, X, train=False):
    """``forward(X)`` in eval mode (or in training mode, with dropout active), with its steps."""
    module = build(student, args, train)
    with recording(module) as recorder:
        output = module(X)
    return {"$traced": output, "steps": recorder.steps}


def train_and_eval(student, args, X):
    """``forward(X)`` of one module in eval mode, then in training mode (dropout active)."""
    module = build(student, args)
    evaluated = module(X)
    module.train()
    return {"eval": evaluated, "train": module(X)}
