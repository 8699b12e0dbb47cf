"""Public probe for positional_encoding.py (runs in the sandbox: inputs only, no expected value)."""

import torch

from grader.sandbox import probing
from grader.sandbox.probing import ProbeError


def table(student, num_hiddens, max_len):
    """The table ``P`` of ``PositionalEncoding(num_hiddens, 0, max_len)`` (a parameter or buffer is read as a
    plain tensor)."""
    module = probing.build(student, "PositionalEncoding", num_hiddens, 0, kwargs={"max_len": max_len})
    P = probing.attribute(module, "P")
    if not isinstance(P, torch.Tensor):
        raise ProbeError("PositionalEncoding should keep its table in self.P")
    return P.detach()


def encode(student, num_hiddens, max_len, X, train=False):
    """``PositionalEncoding(num_hiddens, 0.5, max_len)(X)`` in eval mode (or in training mode, right
    after ``torch.manual_seed(1)``), with its steps, and whether the call changed ``X`` (the caller's)."""
    module = probing.build(student, "PositionalEncoding", num_hiddens, 0.5, seed=0, train=train,
                           kwargs={"max_len": max_len})
    given = X.clone()
    if train:
        probing.seed(1)
    with probing.recorded_if_sent(module) as recorder:
        output = probing.tensor(module(X), "the output of forward")
    return probing.with_steps({"output": output, "changed_X": not torch.equal(X, given)}, recorder)
