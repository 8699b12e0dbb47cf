"""Public probe for positional_encoding.py (runs in the sandbox: inputs only, no expected value)."""

import torch

from grader.sandbox import probing
from grader.sandbox.probing import ProbeError


def table(student, num_hiddens, max_len):
    """The table ``P`` of ``PositionalEncoding(num_hiddens, 0, max_len)``."""
    module = probing.build(student, "PositionalEncoding", num_hiddens, 0, kwargs={"max_len": max_len})
    P = probing.attribute(module, "P")
    if not isinstance(P, torch.Tensor):
        raise ProbeError("PositionalEncoding should keep its table in self.P")
    return P


def encode(student, num_hiddens, max_len, X, train=False):
    """``PositionalEncoding(num_hiddens, 0.5, max_len)(X)`` in eval mode (or in training mode, right
    after ``torch.manual_seed(1)``), with its steps."""
    module = probing.build(student, "PositionalEncoding", num_hiddens, 0.5, seed=0, train=train,
                           kwargs={"max_len": max_len})
    if train:
        probing.seed(1)
    return probing.traced(module, X)
