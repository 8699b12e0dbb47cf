"""Probes for weight_transfer.py (Exercise 3.1): copy a v2 module's weights into a v1 module.

Runs inside the sandbox, next to student code: inputs only, never an expected value. The
modules are the *reference* SelfAttention_v1 and SelfAttention_v2: the rubric's
``uses = ["self_attention_v1", "self_attention_v2"]`` makes the worker load them under
those names before the student's module, so only the copy function is the student's.
"""

import torch
from torch import nn

from grader.sandbox import probing

NAMES = ("W_query", "W_key", "W_value")


def describe(value):
    """What kind of object a v1 attribute is after the copy, and its shape."""
    if value is None:
        return {"kind": "missing"}
    if not isinstance(value, torch.Tensor):
        return {"kind": type(value).__name__}
    return {"kind": "Parameter" if isinstance(value, nn.Parameter) else "Tensor", "shape": list(value.shape)}


def matrix(value, what):
    """A v1 attribute's values as a plain tensor (None if it is not a tensor)."""
    return probing.tensor(value.detach(), what) if isinstance(value, torch.Tensor) else None


def v2_weight(sa_v2, name):
    """``sa_v2.<name>.weight`` as a plain tensor (None if the student replaced the layer)."""
    weight = getattr(getattr(sa_v2, name, None), "weight", None)
    return probing.tensor(weight.detach(), f"sa_v2.{name}.weight") if isinstance(weight, torch.Tensor) else None


def transfer(student, seed, d_in, d_out, xs, v1_seed=None):
    """Build reference v2 (seed ``seed``) then v1 (seed ``v1_seed`` if given), call the student's
    copy function, then return v1's own matrices (the trusted side compares them with v2's
    weights, transposed), run v1 with its class's forward (not an attribute of the object) and
    v2 on each input in ``xs``, and back-propagate through v1: its matrices' gradients."""
    import self_attention_v1  # the reference modules (see the module docstring)
    import self_attention_v2

    copy = probing.part(student, "copy_v2_weights_into_v1", "function")
    probing.seed(seed)
    sa_v2 = self_attention_v2.SelfAttention_v2(d_in, d_out)
    if v1_seed is not None:
        probing.seed(v1_seed)
    sa_v1 = self_attention_v1.SelfAttention_v1(d_in, d_out)
    v1_forward = self_attention_v1.SelfAttention_v1.forward  # the class's, as built before student code ran
    probing.call(copy, sa_v1, sa_v2)

    attributes = {name: getattr(sa_v1, name, None) for name in NAMES}
    result = {
        "v1_params": {name: describe(value) for name, value in attributes.items()},
        "v1_matrices": {name: matrix(value, f"sa_v1.{name}") for name, value in attributes.items()},
        "v1_named": [name for name, _ in sa_v1.named_parameters()],
        "v2_weights": {name: v2_weight(sa_v2, name) for name in NAMES},
        "v2_named": [name for name, _ in sa_v2.named_parameters()],
    }
    with torch.no_grad():
        result["v2"] = [probing.output(sa_v2, x, what="sa_v2(x)") for x in xs]
    outs, error = probing.caught(lambda: [v1_forward(sa_v1, x) for x in xs])
    if error is not None:  # the usual cause: untransposed weights
        result["v1_error"] = f"{type(error).__name__}: {error}"[:300]
        return result
    result["v1"] = [probing.tensor(out, "sa_v1(x)") for out in outs]
    loss = sum((out.float() ** 2).sum() for out in outs)
    if isinstance(loss, torch.Tensor) and loss.requires_grad:
        probing.call(loss.backward)
    result["v1_gradients"] = {name: matrix(getattr(value, "grad", None), f"sa_v1.{name}.grad")
                              for name, value in attributes.items()}
    return result
