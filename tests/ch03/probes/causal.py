"""Probes for causal.py (section 3.5). They run inside the sandbox, next to student code.

Only inputs come in (tensors as marker kwargs); no expected value lives here. Each probe seeds
torch itself before it builds a module, so the trusted test can build the reference the same way.
"""

import torch

from grader.sandbox import probing
from grader.sandbox.probing import ProbeError

CLASS = "CausalAttention"


# -- functions of 3.5.1 --------------------------------------------------------------------------
def masks(student, function, sizes):
    """``function(n)`` (simple_causal_mask: the marker names the function it checks) for every n in
    ``sizes``."""
    make = probing.part(student, function, "function")
    with probing.recorded_if_sent() as recorder:
        found = [probing.tensor(make(n), f"simple_causal_mask({n})") for n in sizes]
    return probing.with_steps(found, recorder)


def _unchanged_input(student, function: str, given, *args):
    """``function(given, *args)`` with its steps, and ``given`` afterwards (it must not change)."""
    target = probing.part(student, function, "function")
    with probing.recorded_if_sent() as recorder:
        result = target(given, *args)
    return probing.with_steps({"result": probing.tensor(result, f"the result of {function}"), "input_after": given},
                              recorder)


def renormalize(student, function, weights):
    """``function(weights)`` (mask_and_renormalize), and the input afterwards (it must not change)."""
    return _unchanged_input(student, function, weights.clone())


def causal_weights(student, function, scores, d_k):
    """``function(scores, d_k)`` (causal_attention_weights), and the input afterwards (it must not change)."""
    return _unchanged_input(student, function, scores.clone(), d_k)


def masked_scores(student, function, scores):
    """What ``function(scores, d_k=1)`` (causal_attention_weights) gives softmax (the masked scores;
    None when no softmax call was seen, e.g. a softmax written by hand), and the weights it returns."""
    target = probing.part(student, function, "function")
    with probing.recorded() as recorder:
        weights = target(scores.clone(), 1)
    weights = probing.tensor(weights, "the result of causal_attention_weights")
    masked = probing.softmax_weights(recorder.steps, scores.shape[-1], which="softmax input")
    return probing.with_steps({"masked": masked, "weights": weights}, recorder)


# -- CausalAttention (3.5.3) ----------------------------------------------------------------------
def forward(student, seed, args, x, kwargs=None, train=False, forward_seed=None, name=CLASS):
    """Build ``name(*args)`` after seeding, set train/eval mode, return forward(x) with its steps."""
    module = probing.build(student, name, *args, seed=seed, train=train, kwargs=kwargs)
    if forward_seed is not None:
        probing.seed(forward_seed)
    return probing.traced(module, x)


def shorter(student, seed, args, x, name=CLASS):
    """forward(x) in eval mode for fewer tokens than context_length; an error is returned, not raised."""
    module = probing.build(student, name, *args, seed=seed, train=False)
    with probing.recording(module) as recorder:
        out, error = probing.caught(module, x)
    if error is not None:  # the test explains what this error usually means
        return {"out": None, "error": probing.explain(error, student)}
    return probing.with_steps({"out": probing.tensor(out, "the output of forward"), "error": None}, recorder)


def future(student, seed, args, x, changed, name=CLASS, dims=None):
    """Outputs for ``x`` and for ``changed`` (same start, other later tokens), and the weights."""
    module = probing.build(student, name, *args, seed=seed, train=False)
    with probing.recorded(module) as recorder:
        out = module(x)
    weights = probing.softmax_weights(recorder.steps, x.shape[1], dims=dims)
    return probing.with_steps({"out": probing.tensor(out, "the output of forward"),
                               "out_changed": probing.output(module, changed), "weights": weights}, recorder)


def dropout(student, seed, n, p, heads=None):
    """Dropout seen by its behaviour: ``CausalAttention(n, 2n, n, p)`` (or, with ``heads``,
    that class with 2 heads of 2n features) whose value layer is set to give values [I | I ...]
    and whose output projection, if any, is the identity, applied to the identity: the output
    then shows the attention weights themselves, each twice. Returns it in eval and in
    training mode; any order of random draws passes."""
    d_out = 2 * n if heads is None else 4 * n
    args = [n, d_out, n, p] if heads is None else [n, d_out, n, p, 2]
    module = probing.build(student, heads or CLASS, *args, seed=seed)
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
    probing.call(module.eval)
    with torch.no_grad():
        eval_out = probing.output(module, x)
        probing.call(module.train)
        probing.seed(seed + 1)
        with probing.recorded_if_sent(module) as recorder:
            train_out = module(x)
    # The recorded run's output first: the diagnosis reads a probe's first tensor as the output its steps lead to.
    return probing.with_steps({"train": probing.tensor(train_out, "the output of forward"), "eval": eval_out}, recorder)


def structure(student, args, name=CLASS, x=None):
    """The names of the module's buffers, parameters and state_dict entries, and the mask; with
    ``x``, the output of the module (built after seed 0) on it in eval mode (a structure is worth
    points only with the numbers it gives)."""
    module = probing.build(student, name, *args, seed=0)
    out = None
    if x is not None:
        probing.call(module.eval)
        out = probing.output(module, x)
    with probing.student_code():
        buffers = dict(module.named_buffers())
        found = {
            "parameters": [name for name, _ in module.named_parameters()],
            "state_dict": sorted(module.state_dict()),
            "mask_attribute": type(getattr(module, "mask", None)).__name__,
        }
    mask = buffers.get("mask")
    return {"buffers": sorted(buffers), **found, "out": out,
            "mask": probing.tensor(mask, "the mask buffer") if mask is not None else None}


def gradients(student, seed, args, x, kwargs=None, name=CLASS, train_seed=None):
    """Backpropagate a weighted sum of the output in eval mode; the gradient of every parameter
    (None if none). With ``train_seed``, a forward and backward pass in training mode first
    (dropout active: what it does in place must not break backward), its gradients then cleared."""
    module = probing.build(student, name, *args, seed=seed, kwargs=kwargs)
    if train_seed is not None:
        probing.call(module.train)
        probing.seed(train_seed)
        probing.backward(probing.call(module, x))
        for parameter in module.parameters():
            parameter.grad = None
    probing.call(module.eval)
    probing.backward(probing.call(module, x))
    return probing.gradients(module)
