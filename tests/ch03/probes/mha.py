"""Probes for mha.py (section 3.6, Exercises 3.2 and 3.3). They run inside the sandbox.

The student's mha.py imports CausalAttention from causal; the grader loads the reference causal.py
under that name first (``uses = ["causal"]`` in the rubric). Only inputs come in; each probe seeds
torch itself before it builds a module, so the trusted test can build the reference the same way.
The probes shared with causal.py (forward passes, dropout, gradients) are causal's, by class name.
"""

import torch
from torch import nn

from grader.sandbox import probing

_causal = probing.sibling(__file__, "causal")
WRAPPER, MHA = "MultiHeadAttentionWrapper", "MultiHeadAttention"


def as_list(heads):
    """The heads as a list (a ModuleList, list or tuple), else None."""
    try:
        with probing.student_code():
            return list(heads)
    except TypeError:
        return None


def dropout_rates(heads: list) -> list:
    """Each head's ``dropout.p`` (None where a head has no nn.Dropout)."""
    return [float(h.dropout.p) if isinstance(getattr(h, "dropout", None), nn.Dropout) else None for h in heads]


def head_biases(heads: list) -> list:
    """Whether each head's query layer has a bias."""
    return [isinstance(getattr(h, "W_query", None), nn.Linear) and h.W_query.bias is not None for h in heads]


# -- forward passes ------------------------------------------------------------------------------
def forward(student, seed, name, args, x, kwargs=None, train=False, forward_seed=None):
    """Build ``name(*args)`` after seeding, set train/eval mode, return forward(x)."""
    return _causal.forward(student, seed, args, x, kwargs, train, forward_seed, name=name)


def shorter(student, seed, name, args, x):
    """forward(x) for fewer tokens than context_length; an error is returned, not raised."""
    return _causal.shorter(student, seed, args, x, name=name)


def future(student, seed, args, x, changed):
    """MultiHeadAttention outputs for ``x`` and ``changed`` (other later tokens), and the weights."""
    return _causal.future(student, seed, args, x, changed, name=MHA, dims=4)


def dropout(student, seed, n, p):
    """Dropout seen by its behaviour in MultiHeadAttention (see probes/causal.py: dropout)."""
    return _causal.dropout(student, seed, n, p, heads=MHA)


def gradients(student, seed, name, args, x, kwargs=None, train_seed=None):
    """Backpropagate a weighted sum of the output; the gradient of every parameter (None if none)."""
    return _causal.gradients(student, seed, args, x, kwargs, name=name, train_seed=train_seed)


# -- structure -------------------------------------------------------------------------------------
def wrapper_heads(student, seed, args, x, kwargs=None):
    """How the wrapper keeps its heads, each head's settings, its output and each head's output."""
    module = probing.build(student, WRAPPER, *args, seed=seed, kwargs=kwargs)
    heads = getattr(module, "heads", None)
    listed = as_list(heads)
    info = {
        "heads_type": type(heads).__name__,
        "module_list": isinstance(heads, nn.ModuleList),
        "head_types": [type(h).__name__ for h in listed] if listed is not None else None,
        "parameters": sum(p.numel() for p in module.parameters()),
    }
    if listed is None or not all(isinstance(h, nn.Module) for h in listed):
        return info
    info["distinct_heads"] = len({id(h) for h in listed})  # one module listed three times is one head
    info["dropout"] = dropout_rates(listed)
    info["bias"] = head_biases(listed)
    probing.call(module.eval)
    for h in listed:  # also when heads is a plain list, which eval() does not reach
        probing.call(h.eval)
    info["out"] = probing.output(module, x)
    info["head_outputs"] = [probing.output(h, x, what="the output of a head") for h in listed]
    return info


def mha_structure(student, args, indivisible, x=None):
    """Buffers, parameters, state_dict, out_proj and head sizes; what an indivisible d_out raises;
    the output on ``x`` (see probes/causal.py: structure)."""
    info = _causal.structure(student, args, name=MHA, x=x)
    module = probing.build(student, MHA, *args, seed=0)
    out_proj = getattr(module, "out_proj", None)
    info.update({
        "out_proj": type(out_proj).__name__,
        "out_proj_shape": [out_proj.in_features, out_proj.out_features, out_proj.bias is not None]
        if isinstance(out_proj, nn.Linear) else None,
        "num_heads": probing.int_or_none(getattr(module, "num_heads", None)),
        "head_dim": probing.int_or_none(getattr(module, "head_dim", None)),
    })
    _, error = probing.caught(probing.build, student, MHA, *indivisible, seed=0)
    info["indivisible"] = type(error).__name__ if error is not None else None  # which exception is what the test checks
    return info


# -- Exercises 3.2 and 3.3 -----------------------------------------------------------------------
def exercise_3_2(student, seed, args, x):
    """exercise_3_2_wrapper(*args) built after seeding, in eval mode: its output and its heads."""
    module = probing.build(student, "exercise_3_2_wrapper", *args, seed=seed, train=False, kind="function")
    heads = as_list(getattr(module, "heads", None))
    found = {
        "type": type(module).__name__,
        "heads": len(heads) if heads is not None else None,
        "dropout": dropout_rates(heads) if heads is not None else None,
        "bias": head_biases(heads) if heads is not None else None,
        "out": probing.output(module, x),
    }
    if len(args) == 3 and found["type"] == WRAPPER:  # the wrapper built directly with the same dropout:
        # whether it passes dropout on to its heads itself
        wrapper, _ = probing.caught(probing.build, student, WRAPPER, args[0], 1, args[1], args[2], seed=seed,
                                    kwargs={"num_heads": 2})  # one that raises: the wrapper's own checks say so
        direct = as_list(getattr(wrapper, "heads", None)) if wrapper is not None else None
        found["wrapper_dropout"] = dropout_rates(direct) if direct is not None else None
        found["wrapper_bias"] = head_biases(direct) if direct is not None else None
    return found


def exercise_3_3(student, seed, x):
    """exercise_3_3_gpt2_attention() built after seeding: its configuration, and its output on
    ``x`` in eval mode with its nn.Linear layers given fixed numbers instead of random ones, in the
    order they are built (``probing.build(fixed=True)``: the numbers that configuration gives,
    without drawing 2.4 million random weights at every run)."""
    module = probing.build(student, "exercise_3_3_gpt2_attention", seed=seed, train=False, kind="function", fixed=True)
    mask = dict(module.named_buffers()).get("mask")
    dropout = getattr(module, "dropout", None)
    return {
        "type": type(module).__name__,
        "parameters": sum(p.numel() for p in module.parameters() if p.requires_grad),
        "shapes": {name: list(p.shape) for name, p in module.named_parameters()},
        "num_heads": probing.int_or_none(getattr(module, "num_heads", None)),
        "mask_shape": list(mask.shape) if isinstance(mask, torch.Tensor) else None,
        "dropout": float(dropout.p) if isinstance(dropout, nn.Dropout) else None,
        "head_dim": probing.int_or_none(getattr(module, "head_dim", None)),
        "d_out": probing.int_or_none(getattr(module, "d_out", None)),
        "out": probing.output(module, x),
    }
