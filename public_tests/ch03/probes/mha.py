"""Public probes for mha.py (run in the sandbox: inputs only, no expected value).

The probes shared with causal.py (forward passes, dropout, structure, gradients) are causal's,
by class name.
"""

import torch
from torch import nn

from grader.sandbox import probing

_causal = probing.sibling(__file__, "causal")


def output(student, cls, seed, args, kwargs, x):
    """``cls(*args, **kwargs)`` built right after ``torch.manual_seed(seed)``, in eval mode, applied to ``x``."""
    module = probing.build(student, cls, *args, seed=seed, train=False, kwargs=kwargs)
    return probing.traced(module, x)


def outputs(student, cls, seed, args, xs):
    """One module (eval mode) applied to each input of ``xs`` in turn."""
    return _causal.outputs(student, seed, args, xs, name=cls)


def dropout(student, seed, n, p):
    """Dropout seen by its behaviour in MultiHeadAttention(n, 4n, n, p, 2) (see probes/causal.py)."""
    return _causal.dropout(student, seed, n, p, name="MultiHeadAttention", args=[n, 4 * n, n, p, 2])


def structure(student, cls, args):
    """The names of the module's buffers and state_dict entries."""
    return _causal.structure(student, args, name=cls)


def gradients(student, cls, seed, args, x, kwargs=None, train_seed=None):
    """The gradient of every parameter, after a training-mode pass (see probes/causal.py)."""
    return _causal.gradients(student, seed, args, x, kwargs, name=cls, train_seed=train_seed)


def wrapper_heads(student, seed, args, kwargs):
    """How the wrapper keeps its heads: as registered submodules (parameters seen, eval reaching them),
    and what each head is given (its dropout rate, whether its projections have a bias)."""
    module = probing.build(student, "MultiHeadAttentionWrapper", *args, seed=seed, kwargs=kwargs)
    probing.call(module.eval)
    with probing.student_code():
        heads = getattr(module, "heads", None)
        listed = list(heads) if isinstance(heads, (list, tuple, nn.ModuleList)) else []
        modules = [h for h in listed if isinstance(h, nn.Module)]
        return {"parameters": int(sum(p.numel() for p in module.parameters())),
                "heads_in_eval_mode": [not h.training for h in modules],
                "dropout": [float(h.dropout.p) if isinstance(getattr(h, "dropout", None), nn.Dropout) else None
                            for h in modules],
                "bias": [isinstance(getattr(h, "W_query", None), nn.Linear) and h.W_query.bias is not None
                         for h in modules]}


def exercise_3_2(student, seed, x):
    """``exercise_3_2_wrapper(3, 6)`` built right after ``torch.manual_seed(seed)``: its class, its number
    of heads, and its output on ``x`` (with the steps it took, only for a ``MultiHeadAttentionWrapper``: another
    class's steps are not the wrapper's, and comparing them would point at correct code)."""
    module = probing.build(student, "exercise_3_2_wrapper", 3, 6, seed=seed, train=False, kind="function")
    with probing.student_code():
        heads = getattr(module, "heads", None)
        count = len(heads) if isinstance(heads, (list, tuple, nn.ModuleList)) else None
    found = {"type": type(module).__name__[:80], "heads": count}
    if found["type"] != "MultiHeadAttentionWrapper":  # another model: its steps are not the wrapper's to compare
        return {**found, "out": probing.output(module, x)}
    with probing.recorded_if_sent(module) as recorder:
        out = module(x)
    return probing.with_steps({**found, "out": probing.tensor(out, "the output of forward")}, recorder)


def parameter_count(student):
    """How many trainable numbers ``exercise_3_3_gpt2_attention()`` holds."""
    module = probing.build(student, "exercise_3_3_gpt2_attention", kind="function", initialize=False)
    return int(sum(p.numel() for p in module.parameters() if p.requires_grad))


def exercise_3_3_configuration(student):
    """How ``exercise_3_3_gpt2_attention()`` is configured (no value): its number of heads, the
    shape of its ``mask`` buffer and its dropout rate."""
    module = probing.build(student, "exercise_3_3_gpt2_attention", kind="function", initialize=False)
    with probing.student_code():
        mask = dict(module.named_buffers()).get("mask")
        dropout = getattr(module, "dropout", None)
        return {"num_heads": probing.int_or_none(getattr(module, "num_heads", None)),
                "mask_shape": [int(n) for n in mask.shape] if type(mask) is torch.Tensor else None,
                "dropout": float(dropout.p) if isinstance(dropout, nn.Dropout) and type(dropout.p) in (int, float)
                else None}
