"""Public probes for self_attention_v2.py (run in the sandbox: inputs only, no expected value)."""

import torch

from grader.sandbox import probing

NAMES = ("W_query", "W_key", "W_value")


def output(student, seed, d_in, d_out, x, qkv_bias=None):
    """``SelfAttention_v2(d_in, d_out[, qkv_bias])`` built right after ``torch.manual_seed(seed)``, applied to ``x``."""
    kwargs = None if qkv_bias is None else {"qkv_bias": qkv_bias}
    return probing.traced(probing.build(student, "SelfAttention_v2", d_in, d_out, seed=seed, kwargs=kwargs), x)


def parameters(student, seed, d_in, d_out):
    """The weights of the three layers of ``SelfAttention_v2(d_in, d_out)`` built right after
    ``torch.manual_seed(seed)`` (in the order query, key, value)."""
    module = probing.build(student, "SelfAttention_v2", d_in, d_out, seed=seed)
    found = {name: probing.attribute(module, f"{name}.weight") for name in NAMES}
    plain = {name: torch.Tensor.detach(v) if isinstance(v, torch.Tensor) else v for name, v in found.items()}
    return {name: probing.tensor(value, f"self.{name}.weight") for name, value in plain.items()}
