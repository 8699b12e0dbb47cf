"""Probes for causal.py (section 3.5). They run inside the sandbox, next to student code.

Only inputs come in (tensors as marker kwargs); no expected value lives here. Each probe seeds
torch itself before it builds a module, so the trusted test can build the reference the same way.
"""

import torch

from grader.sandbox.trace import recording
from grader.sandbox.worker import ProbeError, describe_exception, exact_tensor


def softmax_steps(steps, which: str, n: int):
    """The last recorded softmax input (``which="softmax input"``) or output ("softmax") ending in (n, n)."""
    for label, t in reversed(steps):
        if label == which and t.dim() >= 2 and tuple(t.shape[-2:]) == (n, n):
            return t
    return None


def traced_output(module, x, what="the output of forward"):
    """``module(x)`` (an exact tensor) with the steps it took."""
    with recording(module) as recorder:
        out = output(module(x), what)
    return {"$traced": out, "steps": recorder.steps}


def build(student, seed, args, kwargs=None, name="CausalAttention"):
    """``student.<name>(*args, **kwargs)`` built right after ``torch.manual_seed(seed)``."""
    cls = getattr(student, name, None)
    if cls is None:
        raise ProbeError(f"your module has no class named {name!r}")
    torch.manual_seed(seed)
    return cls(*args, **(kwargs or {}))


def output(value, what="the output of forward"):
    return exact_tensor(value, what)


# -- functions of 3.5.1 --------------------------------------------------------------------------
def masks(student, sizes):
    """simple_causal_mask(n) for every n in ``sizes``."""
    return [exact_tensor(student.simple_causal_mask(n), f"simple_causal_mask({n})") for n in sizes]


def renormalize(student, weights):
    """mask_and_renormalize(weights), and the input afterwards (it must not change)."""
    given = weights.clone()
    with recording() as recorder:
        result = exact_tensor(student.mask_and_renormalize(given), "the result of mask_and_renormalize")
    return {"$traced": {"result": result, "input_after": given}, "steps": recorder.steps}


def causal_weights(student, scores, d_k):
    """causal_attention_weights(scores, d_k), and the input afterwards (it must not change)."""
    given = scores.clone()
    with recording() as recorder:
        result = exact_tensor(student.causal_attention_weights(given, d_k), "the result of causal_attention_weights")
    return {"$traced": {"result": result, "input_after": given}, "steps": recorder.steps}


def masked_scores(student, scores):
    """What causal_attention_weights(scores, d_k=1) gives softmax (the masked scores; None when
    no softmax call was seen, e.g. a softmax written by hand), and the weights it returns."""
    n = scores.shape[-1]
    with recording() as recorder:
        weights = exact_tensor(student.causal_attention_weights(scores.clone(), 1), "the result of causal_attention_weights")
    return {"$traced": {"masked": softmax_steps(recorder.steps, "softmax input", n), "weights": weights},
            "steps": recorder.steps}


# -- CausalAttention (3.5.3) ----------------------------------------------------------------------
def forward(student, seed, args, x, kwargs=None, train=False, forward_seed=None):
    """Build CausalAttention(*args) after seeding, set train/eval mode, return forward(x)."""
    module = build(student, seed, args, kwargs)
    module.train(train)
    if forward_seed is not None:
        torch.manual_seed(forward_seed)
    return traced_output(module, x)


def shorter(student, seed, args, x):
    """forward(x) for fewer tokens than context_length; an error is returned, not raised."""
    module = build(student, seed, args)
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
    """Outputs for ``x`` and for ``changed`` (same start, other later tokens), and the weights."""
    module = build(student, seed, args)
    module.eval()
    with recording(module) as recorder:
        out = output(module(x))
    weights = softmax_steps(recorder.steps, "softmax", x.shape[1])
    return {"$traced": {"out": out, "out_changed": output(module(changed)), "weights": weights}, "steps": recorder.steps}


def dropout(student, seed, n, p, heads=None):
    """Dropout seen by its behaviour: ``CausalAttention(n, 2n, n, p)`` (or, with ``heads``,
    that class with 2 heads of 2n features) whose value layer is set to give values [I | I ...]
    and whose output projection, if any, is the identity, applied to the identity: the output
    then shows the attention weights themselves, each twice. Returns it in eval and in
    training mode; any order of random draws passes."""
    d_out = 2 * n if heads is None else 4 * n
    args = [n, d_out, n, p] if heads is None else [n, d_out, n, p, 2]
    module = build(student, seed, args, name=heads or "CausalAttention")
    value, out_proj = getattr(module, "W_value", None), getattr(module, "out_proj", None)
    if not isinstance(value, torch.nn.Linear) or value.weight.shape != (d_out, n):
        raise ProbeError(f"self.W_value should be nn.Linear({n}, {d_out})")
    with torch.no_grad():
        value.weight.copy_(torch.eye(n).repeat(d_out // n, 1))
        if value.bias is not None:
            value.bias.zero_()
        if isinstance(out_proj, torch.nn.Linear) and out_proj.weight.shape == (d_out, d_out):
            out_proj.weight.copy_(torch.eye(d_out))
            if out_proj.bias is not None:
                out_proj.bias.zero_()
    x = torch.eye(n).repeat(2, 1, 1)  # (2, n, n)
    module.eval()
    with torch.no_grad():
        eval_out = output(module(x))
        module.train()
        torch.manual_seed(seed + 1)
        with recording(module) as recorder:
            train_out = output(module(x))
    return {"$traced": {"eval": eval_out, "train": train_out}, "steps": recorder.steps}


def structure(student, args):
    """The names of the module's buffers, parameters and state_dict entries, and the mask."""
    module = build(student, 0, args)
    buffers = dict(module.named_buffers())
    mask = buffers.get("mask")
    return {
        "buffers": sorted(buffers),
        "parameters": [name for name, _ in module.named_parameters()],
        "state_dict": sorted(module.state_dict()),
        "mask": exact_tensor(mask, "the mask buffer") if mask is not None else None,
        "mask_attribute": type(getattr(module, "mask", None)).__name__,
    }


def gradients(student, seed, args, x, kwargs=None):
    """Backpropagate a weighted sum of the output; the gradient of every parameter (None if none)."""
    module = build(student, seed, args, kwargs)
    out = module(x)
    if not isinstance(out, torch.Tensor):
        raise ProbeError(f"forward returned a {type(out).__name__}, not a tensor")
    weights = torch.linspace(-1.0, 1.0, out.numel()).reshape(out.shape)
    (out * weights).sum().backward()
    return {name: (p.grad.detach().clone() if p.grad is not None else None) for name, p in module.named_parameters()}
