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
