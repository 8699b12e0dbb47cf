"""Public probe for positional_encoding.py (runs in the sandbox: inputs only, no expected value)."""

import torch

from grader.sandbox.worker import ProbeError


def table(student, num_hiddens, max_len):
    """The table ``P`` of ``PositionalEncoding(num_hiddens, 0, max_len)``."""
    cls = getattr(student, "PositionalEncoding", None)
    if cls is None:
        raise ProbeError("your module has no class named 'PositionalEncoding'")
    P = getattr(cls(num_hiddens, 0, max_len=max_len), "P", None)
    if not isinstance(P, torch.Tensor):
        raise ProbeError("PositionalEncoding should keep its table in self.P")
    return P
