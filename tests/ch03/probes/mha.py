"""Probes for mha.py (section 3.6, Exercises 3.2 and 3.3). They run inside the sandbox.

The student's mha.py imports CausalAttention from causal; the grader loads the reference causal.py
under that name first (``uses = ["causal"]`` in the rubric). Only inputs come in; each probe seeds
torch itself before it builds a module, so the trusted test can build the reference the same way.
"""

import importlib.util
from pathlib import Path

import torch
from torch import nn

from grader.sandbox.trace import recording
from grader.sandbox.worker import ProbeError, describe_exception, exact_tensor

WRAPPER, MHA = "MultiHeadAttentionWrapper", "MultiHeadAttention"


def _sibling(stem: str):
    """The probes of another module of this assignment (loaded by path, like this file)."""
    spec = importlib.util.spec_from_file_location(f"_probes_sibling_{stem}", Path(__file__).with_name(f"{stem}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_causal = _sibling("causal")


def build(student, seed, name, args, kwargs=None):
    """``student.<name>(*args, **kwargs)`` built right after ``torch.manual_seed(seed)``."""
    cls = getattr(student, name, None)
    if cls is None:
        raise ProbeError(f"your module has no class named {name!r}")
    torch.manual_seed(seed)
    return cls(*args, **(kwargs or {}))


def output(value, what="the output of forward"):
    return exact_tensor(value, what)


def as_list(heads):
    """The heads as a list (a ModuleList, list or tuple), else None."""
    try:
        return list(heads)
    except TypeError:
        return None


# -- forward passes ------------------------------------------------------------------------------
def forward(student, seed, name, args, x, kwargs=None, train=False, forward_seed=None):
    """Build ``name(*args)`` after seeding, set train/eval mode, return forward(x)."""
    module = build(student, seed, name, args, kwargs)
    module.train(train)
    if forward_seed is not None:
        torch.manual_seed(forward_seed)
    return _causal.traced_output(module, x)


def shorter(student, seed, name, args, x):
    """forward(x) for fewer tokens than context_length; an error is returned, not raised."""
    module = build(student, seed, name, args)
    module.eval()
    try:
        with recording(module) as recorder:
            out = output(module(x))
        return {"$traced": {"out": out, "error": None}, "steps": recorder.steps}
    except (ProbeError, NotImplementedError):
        raise
    except Exception as exc:  # noqa: BLE001 - the test explains what this error usually means
        info = describe_exception(exc, getattr(student, "__file__", "") or "")
        where = f" ({info['where']})" if info["where"] else ""
        return {"out": None, "error": f"{info['type']}: {info['message']}{where}"}


def future(student, seed, args, x, changed):
    """MultiHeadAttention outputs for ``x`` and ``changed`` (other later tokens), and the weights."""
    module = build(student, seed, MHA, args)
    module.eval()
    n = x.shape[1]
    with recording(module) as recorder:
        out = output(module(x))
    weights = next((t for label, t in reversed(recorder.steps)
                    if label == "softmax" and t.dim() == 4 and tuple(t.shape[-2:]) == (n, n)), None)
    return {"$traced": {"out": out, "out_changed": output(module(changed)), "weights": weights}, "steps": recorder.steps}


def dropout(student, seed, n, p):
    """Dropout seen by its behaviour in MultiHeadAttention (see probes/causal.py: dropout)."""
    return _causal.dropout(student, seed, n, p, heads=MHA)


def gradients(student, seed, name, args, x, kwargs=None):
    """Backpropagate a weighted sum of the output; the gradient of every parameter (None if none)."""
    module = build(student, seed, name, args, kwargs)
    out = module(x)
    if not isinstance(out, torch.Tensor):
        raise ProbeError(f"forward returned a {type(out).__name__}, not a tensor")
    weights = torch.linspace(-1.0, 1.0, out.numel()).reshape(out.shape)
    (out * weights).sum().backward()
    return {name: (p.grad.detach().clone() if p.grad is not None else None) for name, p in module.named_parameters()}


# -- structure -------------------------------------------------------------------------------------
def wrapper_heads(student, seed, args, x, kwargs=None):
    """How the wrapper keeps its heads, each head's settings, its output and each head's output."""
    module = build(student, seed, WRAPPER, args, kwargs)
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
    info["dropout"] = [float(h.dropout.p) if isinstance(getattr(h, "dropout", None), nn.Dropout) else None for h in listed]
    info["bias"] = [isinstance(getattr(h, "W_query", None), nn.Linear) and h.W_query.bias is not None for h in listed]
    module.eval()
    for h in listed:  # also when heads is a plain list, which eval() does not reach
        h.eval()
    info["out"] = output(module(x))
    info["head_outputs"] = [output(h(x), "the output of a head") for h in listed]
    return info


def mha_structure(student, args, indivisible):
    """Buffers, parameters, state_dict, out_proj and head sizes; what an indivisible d_out raises."""
    module = build(student, 0, MHA, args)
    buffers = dict(module.named_buffers())
    mask = buffers.get("mask")
    out_proj = getattr(module, "out_proj", None)
    info = {
        "buffers": sorted(buffers),
        "parameters": [name for name, _ in module.named_parameters()],
        "state_dict": sorted(module.state_dict()),
        "mask": exact_tensor(mask, "the mask buffer") if mask is not None else None,
        "mask_attribute": type(getattr(module, "mask", None)).__name__,
        "out_proj": type(out_proj).__name__,
        "out_proj_shape": [out_proj.in_features, out_proj.out_features, out_proj.bias is not None]
        if isinstance(out_proj, nn.Linear) else None,
        "num_heads": getattr(module, "num_heads", None) if type(getattr(module, "num_heads", None)) is int else None,
        "head_dim": getattr(module, "head_dim", None) if type(getattr(module, "head_dim", None)) is int else None,
    }
    try:
        build(student, 0, MHA, indivisible)
        info["indivisible"] = None
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001 - which exception is what the test checks
        info["indivisible"] = type(exc).__name__
    return info


# -- Exercises 3.2 and 3.3 -----------------------------------------------------------------------
def exercise_3_2(student, seed, args, x):
    """exercise_3_2_wrapper(*args) built after seeding, in eval mode: its output and its heads."""
    function = getattr(student, "exercise_3_2_wrapper", None)
    if function is None:
        raise ProbeError("your module has no function named 'exercise_3_2_wrapper'")
    torch.manual_seed(seed)
    module = function(*args)
    if not isinstance(module, nn.Module):
        raise ProbeError(f"exercise_3_2_wrapper returned a {type(module).__name__}, not a module")
    module.eval()
    heads = as_list(getattr(module, "heads", None))
    return {
        "type": type(module).__name__,
        "heads": len(heads) if heads is not None else None,
        "dropout": [float(h.dropout.p) if isinstance(getattr(h, "dropout", None), nn.Dropout) else None
                    for h in heads] if heads is not None else None,
        "out": output(module(x)),
    }


def exercise_3_3(student, seed):
    """exercise_3_3_gpt2_attention() built after seeding: its configuration (the forward pass is
    graded by the MultiHeadAttention checks, so a mistake there costs points once)."""
    function = getattr(student, "exercise_3_3_gpt2_attention", None)
    if function is None:
        raise ProbeError("your module has no function named 'exercise_3_3_gpt2_attention'")
    torch.manual_seed(seed)
    module = function()
    if not isinstance(module, nn.Module):
        raise ProbeError(f"exercise_3_3_gpt2_attention returned a {type(module).__name__}, not a module")
    module.eval()
    mask = dict(module.named_buffers()).get("mask")
    dropout = getattr(module, "dropout", None)
    return {
        "type": type(module).__name__,
        "parameters": sum(p.numel() for p in module.parameters() if p.requires_grad),
        "shapes": {name: list(p.shape) for name, p in module.named_parameters()},
        "num_heads": getattr(module, "num_heads", None) if type(getattr(module, "num_heads", None)) is int else None,
        "mask_shape": list(mask.shape) if isinstance(mask, torch.Tensor) else None,
        "dropout": float(dropout.p) if isinstance(dropout, nn.Dropout) else None,
        "head_dim": getattr(module, "head_dim", None) if type(getattr(module, "head_dim", None)) is int else None,
        "d_out": getattr(module, "d_out", None) if type(getattr(module, "d_out", None)) is int else None,
    }
