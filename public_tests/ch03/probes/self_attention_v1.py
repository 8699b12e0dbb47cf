"""Public probes for self_attention_v1.py (run in the sandbox: inputs only, no expected value)."""

import torch

from grader.sandbox import probing

NAMES = ("W_query", "W_key", "W_value")


def output(student, seed, d_in, d_out, x):
    """``SelfAttention_v1(d_in, d_out)`` built right after ``torch.manual_seed(seed)``, applied to ``x``."""
    return probing.traced(probing.build(student, "SelfAttention_v1", d_in, d_out, seed=seed), x)


def parameters(student, seed, d_in, d_out):
    """The three matrices of ``SelfAttention_v1(d_in, d_out)`` built right after ``torch.manual_seed(seed)``."""
    module = probing.build(student, "SelfAttention_v1", d_in, d_out, seed=seed)
    found = {name: probing.attribute(module, name) for name in NAMES}
    plain = {name: torch.Tensor.detach(v) if isinstance(v, torch.Tensor) else v for name, v in found.items()}
    return {name: probing.tensor(value, f"self.{name}") for name, value in plain.items()}
