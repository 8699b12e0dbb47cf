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


def layers(student, d_in, d_out):
    """What each of W_query, W_key, W_value is in ``SelfAttention_v2(d_in, d_out)`` and in
    ``SelfAttention_v2(d_in, d_out, qkv_bias=True)``: its kind, its sizes and whether it has a bias."""
    found = {}
    for qkv_bias in (False, True):
        module = probing.build(student, "SelfAttention_v2", d_in, d_out, seed=0,
                               kwargs={"qkv_bias": True} if qkv_bias else None)
        with probing.student_code():
            found[str(qkv_bias)] = {name: describe(getattr(module, name, None)) for name in NAMES}
    return found


def describe(layer):
    """A layer's kind and, for nn.Linear, its sizes and whether it has a bias (structure, no values)."""
    if not isinstance(layer, torch.nn.Linear):
        return {"kind": "missing" if layer is None else type(layer).__name__[:80]}
    return {"kind": "Linear", "sizes": [int(layer.in_features), int(layer.out_features)],
            "bias": isinstance(layer.bias, torch.Tensor)}
