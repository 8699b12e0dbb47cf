"""Probes for causal.py (section 3.5). They run inside the sandbox, next to student code.

Only inputs come in (tensors as marker kwargs); no expected value lives here. Each probe seeds
torch itself before it builds a module, so the trusted test can build the reference the same way.
"""

import contextlib

import torch
import torch.nn.functional as F

from grader.sandbox.worker import ProbeError, describe_exception, exact_tensor


@contextlib.contextmanager
def softmax_spy():
    """Record the inputs and outputs of every softmax call (torch, functional, Tensor, nn.Softmax)."""
    calls = []
    originals = (torch.softmax, F.softmax, torch.Tensor.softmax)
    own = "softmax" in vars(torch.Tensor)  # else Tensor.softmax comes from the C base class
    depth = [0]

    def wrap(original):
        def spy(*args, **kwargs):
            depth[0] += 1
            try:
                result = original(*args, **kwargs)
            finally:
                depth[0] -= 1
            if depth[0] == 0 and args and type(args[0]) is torch.Tensor and type(result) is torch.Tensor:
                calls.append((args[0].detach().clone(), result.detach().clone()))
            return result
        return spy

    torch.softmax, F.softmax, torch.Tensor.softmax = (wrap(f) for f in originals)
    try:
        yield calls
    finally:
        torch.softmax, F.softmax = originals[:2]
        if own:
            torch.Tensor.softmax = originals[2]
        else:
            del torch.Tensor.softmax


def last_square(calls, which: int, n: int):
    """The last recorded softmax input (which=0) or output (which=1) ending in (n, n), else None."""
    for call in reversed(calls):
        t = call[which]
        if t.dim() >= 2 and tuple(t.shape[-2:]) == (n, n):
            return t
    return None


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
    result = exact_tensor(student.mask_and_renormalize(given), "the result of mask_and_renormalize")
    return {"result": result, "input_after": given}


def causal_weights(student, scores, d_k):
    """causal_attention_weights(scores, d_k), and the input afterwards (it must not change)."""
    given = scores.clone()
    result = exact_tensor(student.causal_attention_weights(given, d_k), "the result of causal_attention_weights")
    return {"result": result, "input_after": given}


def masked_scores(student, scores):
    """What causal_attention_weights(scores, d_k=1) passes to softmax: the masked scores."""
    n = scores.shape[-1]
    with softmax_spy() as calls:
        student.causal_attention_weights(scores.clone(), 1)
    found = last_square(calls, 0, n)
    if found is None:
        raise ProbeError("could not see the masked scores: causal_attention_weights should call "
                         "torch.softmax on the scores after filling the future with -inf")
    return found


# -- CausalAttention (3.5.3) ----------------------------------------------------------------------
def forward(student, seed, args, x, kwargs=None, train=False, forward_seed=None):
    """Build CausalAttention(*args) after seeding, set train/eval mode, return forward(x)."""
    module = build(student, seed, args, kwargs)
    module.train(train)
    if forward_seed is not None:
        torch.manual_seed(forward_seed)
    return output(module(x))


def shorter(student, seed, args, x):
    """forward(x) for fewer tokens than context_length; an error is returned, not raised."""
    module = build(student, seed, args)
    module.eval()
    try:
        return {"out": output(module(x)), "error": None}
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
    with softmax_spy() as calls:
        out = output(module(x))
    weights = last_square(calls, 1, x.shape[1])
    return {"out": out, "out_changed": output(module(changed)), "weights": weights}


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
