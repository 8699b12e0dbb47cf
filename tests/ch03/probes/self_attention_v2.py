"""Probes for self_attention_v2.py: build the student's SelfAttention_v2 and run it.

Runs inside the sandbox, next to student code: inputs only, never an expected value.
"""

from torch import nn

from grader.sandbox import probing
from grader.sandbox.probing import ProbeError

NAMES = ("W_query", "W_key", "W_value")


def build(student, seed, d_in, d_out, qkv_bias=None):
    """``SelfAttention_v2(d_in, d_out[, qkv_bias=...])`` built right after ``torch.manual_seed(seed)``."""
    return probing.build(student, "SelfAttention_v2", d_in, d_out, seed=seed,
                         kwargs=None if qkv_bias is None else {"qkv_bias": qkv_bias})


def describe(layer, what):
    """What kind of object a projection is and, for nn.Linear, its sizes, weight and bias."""
    if layer is None:
        return {"kind": "missing"}
    if not isinstance(layer, nn.Linear):
        return {"kind": "Parameter" if isinstance(layer, nn.Parameter) else type(layer).__name__}
    bias = layer.bias
    return {
        "kind": "Linear",
        "in_features": int(layer.in_features),
        "out_features": int(layer.out_features),
        "weight": probing.tensor(layer.weight.detach(), f"{what}.weight"),
        "bias": None if bias is None else probing.tensor(bias.detach(), f"{what}.bias"),
    }


def parameters(module):
    """The three projections as attributes, and every registered parameter's name and shape."""
    return {
        "layers": {name: describe(getattr(module, name, None), name) for name in NAMES},
        "named": [[name, list(p.shape)] for name, p in module.named_parameters()],
    }


def forward(student, seed, d_in, d_out, xs, qkv_bias=None):
    """Build the module once, describe its layers, and apply it to each input in ``xs``
    (recording the steps of each forward pass)."""
    module = build(student, seed, d_in, d_out, qkv_bias)
    return probing.on_each(module, xs, params=parameters(module))


def projections(student, seed, d_in, d_out, x):
    """The queries and keys the module's own W_query and W_key layers give for ``x``."""
    module = build(student, seed, d_in, d_out)
    result = {}
    for name, key in (("W_query", "queries"), ("W_key", "keys")):
        layer = getattr(module, name, None)
        if not callable(layer):
            raise ProbeError(f"self.{name} should be an nn.Linear layer, but it is a {type(layer).__name__}")
        result[key] = probing.call(layer, x)
    return result


def gradients(student, seed, d_in, d_out, x):
    """Back-propagate ``(module(x) ** 2).sum()``; say which parameters received a non-zero gradient."""
    module = build(student, seed, d_in, d_out)
    watched = {name: getattr(getattr(module, name, None), "weight", None) for name in NAMES}
    found = probing.reach(module, x, watched)
    found["gradients"] = {name: probing.tensor_or_none(getattr(value, "grad", None)) for name, value in watched.items()}
    return found
