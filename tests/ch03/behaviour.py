"""Reference computations and checks of behaviour shared by the ch03 tests (trusted side)."""

import torch

from grader.suite.exact import DROPOUT_IN_EVAL, dropout_factor, is_dropout_of
from grader.suite.comparisons import close, graph_cut, require, visibly_wrong_weights

INF = float("inf")
MASK_BUFFER = "self.register_buffer('mask', torch.triu(torch.ones(context_length, context_length), diagonal=1))"


def future_mask(n: int, diagonal: int = 1) -> torch.Tensor:
    """True where a query may not look: above the diagonal (diagonal=1) or also on it (0)."""
    return torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=diagonal)


def weights_from_scores(scores, d_k, *, scale=True, mask=1, dim=-1, fill=-INF):
    """Causal softmax weights; ``mask`` is the triu diagonal (None: no mask)."""
    n = scores.shape[-1]
    if mask is not None:
        scores = scores.masked_fill(future_mask(n, mask), fill)
    return torch.softmax(scores / d_k**0.5 if scale else scores, dim=dim)


def check_mask_buffer(probed, *, what, tokens: int | None = None):
    """The module built with context_length 5 keeps the causal mask as a persistent buffer
    (``tokens``: how many tokens the forward call before the mask was read had)."""
    if "mask" in probed["parameters"]:
        require(False, "the mask is a trainable parameter", what=what,
                hint="A mask is not learned: register it as a buffer, " + MASK_BUFFER)
    plain = probed["mask_attribute"] not in ("NoneType", "Parameter")
    require("mask" in probed["buffers"], "there is no buffer named 'mask'", what=what,
            hint=("self.mask is a plain attribute: it would not move with .to(device) nor be saved in the "
                  "state_dict. Use " if plain else "Use ") + MASK_BUFFER,
            expected="'mask' in named_buffers()", actual=f"buffers {probed['buffers']}")
    require("mask" in probed["state_dict"], "the mask buffer is not in the state_dict", what=what,
            hint="Register it as a persistent buffer (the default, persistent=True): " + MASK_BUFFER)
    mask = probed["mask"]
    if (isinstance(mask, torch.Tensor) and mask.dim() == 2 and mask.shape[0] == mask.shape[1] == tokens
            and tokens < 5 and torch.equal(mask.bool(), future_mask(tokens)) and probed.get("out") is not None):
        size = mask.shape[0]  # the right mask's corner, as big as the forward call's tokens: forward cut it for good
        require(False, f"after a forward call on {size} tokens the mask buffer is the {size} x {size} corner of the "
                       "mask it should keep", what=what, expected="torch.triu(torch.ones(5, 5), diagonal=1)",
                actual=str(mask.tolist()),
                hint="forward slices the mask for the tokens it gets and assigns the slice back to self.mask, so the "
                     "buffer shrinks for every later call: use the slice (self.mask[:num_tokens, :num_tokens]) without "
                     "assigning it to self.mask.")
    require(isinstance(mask, torch.Tensor) and tuple(mask.shape) == (5, 5) and torch.equal(mask.bool(), future_mask(5)),
            "the mask buffer should have ones above the diagonal (the positions to hide), shape (context_length, "
            "context_length)", what=what, hint=MASK_BUFFER, expected="torch.triu(torch.ones(5, 5), diagonal=1)",
            actual=str(mask.tolist() if isinstance(mask, torch.Tensor) and mask.numel() <= 36 else mask))


def dropout_eval(module, n: int) -> torch.Tensor:
    """What the ``dropout`` probe's module gives in eval mode, computed here on the reference
    ``module`` set up as the probe sets up the student's (values [I | I ...], identity out_proj)."""
    with torch.no_grad():
        value, out_proj = module.W_value, getattr(module, "out_proj", None)
        value.weight.copy_(torch.eye(n).repeat(value.weight.shape[0] // n, 1))
        if value.bias is not None:
            value.bias.zero_()
        if out_proj is not None:
            out_proj.weight.copy_(torch.eye(out_proj.weight.shape[0]))
            out_proj.bias.zero_()
        return module.eval()(torch.eye(n).repeat(2, 1, 1))


def reference_gradients(module, x) -> dict:
    """The gradient of every parameter of the reference ``module`` (in eval mode) from
    ``(module(x) * upstream).sum()``, upstream as ``probing.backward`` makes it."""
    module.eval()
    out = module(x)
    (out * torch.linspace(-1.0, 1.0, out.numel()).reshape(out.shape)).sum().backward()
    return {name: p.grad.detach().clone() for name, p in module.named_parameters()}


DROPOUT_ELSEWHERE = ("Dropout belongs on the attention weights only, after softmax (attn_weights = "
                     "self.dropout(attn_weights)), then multiply by the values. Weights that are neither 0 nor scaled "
                     "by 1 / (1 - p) show that dropout (or something else random) acted on a tensor they are computed "
                     "from (the input, the queries or keys, or the scores before softmax); this check cannot tell which: "
                     "look at every self.dropout call in your forward.")


def check_dropout(probed, *, n, p, blocks, what, expected_eval):
    """Dropout judged by its behaviour, whatever the order of random draws (see probes/causal.py).

    The output in eval mode shows the attention weights (in blocks of n features) and must be the
    reference's (``expected_eval``, computed here); in training mode each weight must be 0 or
    scaled by 1 / (1 - p), and the blocks that show the same weights (``blocks``: pairs of block
    indices) must have been dropped alike.
    """
    evaluated, trained = (probed.get("eval"), probed.get("train")) if isinstance(probed, dict) else (None, None)
    require(isinstance(evaluated, torch.Tensor) and isinstance(trained, torch.Tensor), "no outputs to check", what=what)
    still_on = is_dropout_of(evaluated, expected_eval, p)
    require(not still_on, "in eval mode some weights are 0 and the others scaled by 1 / (1 - p): dropout stays on",
            what=what + ", in eval mode (the attention weights themselves)", hint=DROPOUT_IN_EVAL,
            proven=True)
    close(evaluated, expected_eval, what=what + ", in eval mode (the attention weights themselves)", atol=1e-5)
    require(evaluated.shape == trained.shape and evaluated.dim() == 3 and evaluated.shape[-1] % n == 0
            and evaluated.is_floating_point(), f"the output has shape {tuple(trained.shape)}", what=what)
    shown, dropped_out = evaluated.double().split(n, dim=-1), trained.double().split(n, dim=-1)
    for first, second in blocks:
        require(torch.allclose(dropped_out[first], dropped_out[second], atol=1e-5),
                "the two copies of the weights differ: dropout did not act on the attention weights", what=what,
                hint="Apply self.dropout to the attention weights (after softmax), then multiply by the values.",
                proven=True)
    weights, after = torch.cat(shown, dim=-1), torch.cat(dropped_out, dim=-1)
    require(not torch.allclose(after, weights, atol=1e-6), "in training mode the weights are unchanged: no dropout",
            what=what, hint="Call self.dropout on the attention weights in forward.")
    kept, dropped, visible = (after - weights / (1 - p)).abs() < 1e-4, after.abs() < 1e-6, weights.abs() > 1e-6
    factor = dropout_factor(weights, after, p)
    require(factor is None, f"your dropout scales the weights it keeps by {round(factor or 0, 4)}, that is a rate of "
            f"{round(1 - 1 / (factor or 1), 4)}, but dropout={p} was passed", what=what,
            hint="Use the dropout rate the constructor is given: self.dropout = nn.Dropout(dropout).")
    # No single rate explains what was kept (that is said above): dropout acted on another tensor.
    require(bool((kept | dropped).all()), "some weights are neither 0 nor scaled by 1 / (1 - p)", what=what,
            hint=DROPOUT_ELSEWHERE)
    require(bool((dropped & visible).any()) and bool((kept & visible).any()),
            "dropout should drop some weights and keep others", what=what)


def check_outputs(outs, expected, xs, *, what):
    """Each output of the student's module against the reference's on the same input.

    ``expected`` holds the reference's outputs on ``xs``; ``what(x)`` says what was run.
    """
    count = len(outs) if isinstance(outs, list) else None
    require(count == len(xs), f"{len(xs)} output(s) expected, {count if count is not None else 'no list'} came back",
            what=what(xs[0]))
    for x, out, reference_out in zip(xs, outs, expected, strict=True):
        close(out, reference_out, what=what(x))


CUT = ("Something cuts the graph: .detach(), .data, torch.no_grad() or a new tensor built from "
       ".tolist() / .item(). A mask must be a buffer, not a parameter.")


def check_every_gradient(probed, expected: dict, *, what, layers):
    """The gradient of each parameter the reference has (``expected``: name -> the reference's
    gradient, computed here) reached the student's parameter of that name, with the same values.

    ``probed`` maps the student's parameter names to their gradients; ``layers`` is the hint when
    one of the reference's parameters is missing.
    """
    require(isinstance(probed, dict) and probed, "the module has no parameters", what=what)
    missing = [name for name in expected if name not in probed]
    require(not missing, f"missing parameters: {', '.join(missing)}", what=what, hint=layers)
    absent = [name for name, grad in probed.items() if not isinstance(grad, torch.Tensor)]
    for name, grad in probed.items():
        require(isinstance(grad, torch.Tensor), f"no gradient reached {name}", what=what,
                hint=CUT if graph_cut(probed, expected, absent) else "")
        require(bool(torch.isfinite(grad).all()), f"the gradient of {name} has NaN or inf", what=what,
                hint="NaN gradients come from NaN outputs (for instance a row of weights that is all masked).")
        require(bool(grad.abs().sum() > 0), f"the gradient of {name} is zero", what=what,
                hint="Every parameter should influence the output.")
    for name, grad in expected.items():
        close(probed[name], grad, what=f"{what}: the gradient of {name}", atol=1e-5)


def tensor_in(probed, key: str, what: str):
    """``probed[key]`` as a tensor, or a failed check saying what is missing."""
    value = probed.get(key) if isinstance(probed, dict) else None
    require(isinstance(value, torch.Tensor), f"{what}: no tensor to check", what=what)
    return value


def check_shorter_sequence(probed, expected, *, what):
    """A module built for a longer context_length, run on fewer tokens: its forward raised
    nothing (the ``shorter`` probe's ``error``) and gave the reference's output (``out``)."""
    error = probed.get("error") if isinstance(probed, dict) else None
    require(not error, f"your forward raised {error}", what=what)
    close(probed.get("out"), expected, what=what)


def check_input_unchanged(probed, original, *, function, argument, hint):
    """``function`` left its input tensor ``argument`` as it was (the probe's ``input_after``)."""
    after = tensor_in(probed, "input_after", f"the input of {function}")
    require(torch.equal(after, original), f"{function} changed its input tensor",
            what=f"{function} leaves {argument} unchanged", hint=hint)


def check_no_future(probed, expected_weights, expected_outs, *, weights_of):
    """No attention to future tokens: the weights, when softmax showed them and they are wrong on
    their face, against the reference's (``weights_of`` names the module); then the outputs of
    both calls against the reference's (``expected_outs``, computed here)."""
    weights = probed.get("weights") if isinstance(probed, dict) else None
    if isinstance(weights, torch.Tensor):  # seen only when forward calls softmax
        if weights.shape == expected_weights.shape and visibly_wrong_weights(weights, causal=True):
            close(weights, expected_weights, what=f"attention weights of {weights_of} (rows sum to 1, no weight on "
                  "future tokens)", grid=True)
    check_future_unseen(probed, *expected_outs, module=weights_of)


def check_future_unseen(probed, expected_out, expected_changed, *, module):
    """The outputs of tokens 1-4 did not change when tokens 5-7 did (``out``, ``out_changed``, the
    second call of forward), and both outputs are the reference's on the same inputs."""
    out = tensor_in(probed, "out", "the output of forward")
    changed = tensor_in(probed, "out_changed", "the output of forward")
    if out.shape == changed.shape and out.dim() == 3:
        close(changed[:, :4], out[:, :4], what="outputs of tokens 1-4 after changing tokens 5-7 (they must not change)",
              atol=1e-5)
    close(out, expected_out, what=f"the output of {module}")
    close(changed, expected_changed, what=f"the output of a second call of the same {module} on inputs whose tokens "
          "5-7 changed")
