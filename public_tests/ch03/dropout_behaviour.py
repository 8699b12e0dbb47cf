"""Dropout judged by its behaviour, whatever the order of random draws (probes/causal.py: dropout)."""

import torch

from grader.suite.exact import DROPOUT_IN_EVAL, dropout_factor, is_dropout_of
from grader.suite.comparisons import close
from grader.suite.comparisons import require as _require


DROPOUT_ELSEWHERE = ("Dropout belongs on the attention weights only, after softmax (attn_weights = "
                     "self.dropout(attn_weights)), then multiply by the values. Weights that are neither 0 nor scaled "
                     "by 1 / (1 - p) show that dropout (or something else random) acted on a tensor they are computed "
                     "from (the input, the queries or keys, or the scores before softmax); this check cannot tell which: "
                     "look at every self.dropout call in your forward.")


def require(condition, message, *, what, hint="", proven=False):
    """``require`` whose message starts with what was run (the table shows only the message)."""
    _require(condition, f"{what}: {message}", what=what, hint=hint, proven=proven)


def check_dropout(probed, expected_eval, *, n, p, pairs, what):
    """In eval mode the output shows the attention weights (blocks of ``n`` features, each a copy) and
    is the reference's (``expected_eval``); in training mode every weight is 0 or scaled by 1 / (1 - p),
    the copies (``pairs`` of block indices that show the same weights) were dropped alike (dropout acted on the weights), and some were dropped, some kept."""
    evaluated, trained = (probed.get("eval"), probed.get("train")) if isinstance(probed, dict) else (None, None)
    require(isinstance(evaluated, torch.Tensor) and isinstance(trained, torch.Tensor), "no outputs to check", what=what)
    still_on = is_dropout_of(evaluated, expected_eval, p)
    require(not still_on, "in eval mode some weights are 0 and the others scaled by 1 / (1 - p): dropout stays on",
            what=what + ", in eval mode (the attention weights themselves)", hint=DROPOUT_IN_EVAL,
            proven=True)
    close(evaluated, expected_eval, what=what + ", in eval mode (the attention weights themselves)")
    require(evaluated.shape == trained.shape and evaluated.dim() == 3 and evaluated.shape[-1] % n == 0,
            f"the output in training mode has shape {tuple(trained.shape)}", what=what)
    shown, dropped_out = evaluated.double().split(n, dim=-1), trained.double().split(n, dim=-1)
    for first, second in pairs:
        require(torch.allclose(dropped_out[first], dropped_out[second], atol=1e-5),
                "in training mode the copies of the weights differ: dropout did not act on the attention weights",
                what=what, hint="Apply self.dropout to the attention weights (after softmax), then multiply by the values.",
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
    require(bool((kept | dropped).all()), f"in training mode some weights are neither 0 nor scaled by 1 / (1 - {p})",
            what=what, hint=DROPOUT_ELSEWHERE)
    require(bool((dropped & visible).any()) and bool((kept & visible).any()),
            "in training mode dropout should drop some weights and keep others", what=what)
