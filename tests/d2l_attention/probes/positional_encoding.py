"""Probes for positional_encoding.py. They run INSIDE the sandbox, next to the student's
code: inputs only, never an expected value.
"""

import torch

from grader.sandbox import probing
from grader.sandbox.probing import ProbeError

CLASS = "PositionalEncoding"


def table(student, args):
    """The position table ``self.P`` (a parameter or buffer is read as a plain tensor)."""
    P = probing.attribute(probing.build(student, CLASS, *args, seed=0, train=False), "P")
    if not isinstance(P, torch.Tensor):
        raise ProbeError("PositionalEncoding should keep its table as a tensor in self.P")
    return P.detach()


def encode(student, args, X, train=False):
    """``forward(X)`` in eval mode (or in training mode, with dropout active), with its steps, and
    whether the call changed ``X`` (the caller's tensor)."""
    module = probing.build(student, CLASS, *args, seed=0, train=train)
    given = X.clone()
    with probing.recorded_if_sent(module) as recorder:
        output = probing.tensor(module(X), "the output of forward")
    return probing.with_steps({"output": output, "changed_X": not torch.equal(X, given)}, recorder)


def train_and_eval(student, args, X):
    """``forward(X)`` of one module in eval mode, then in training mode (dropout active), each on its
    own copy of ``X`` (whether forward changes its input is checked on its own, with ``encode``)."""
    module = probing.build(student, CLASS, *args, seed=0, train=False)
    evaluated = probing.call(module, X.clone())
    probing.call(module.train)
    return {"eval": evaluated, "train": probing.call(module, X.clone())}
