"""Checks of behaviour shared by the ch03 tests (trusted side)."""

import torch

from grader.checks import require


def check_dropout(probed, *, n, p, blocks, what):
    """Dropout judged by its behaviour, whatever the order of random draws (see probes/causal.py).

    The output in eval mode shows the attention weights (in blocks of n features); in training
    mode each weight must be 0 or scaled by 1 / (1 - p), and the blocks that show the same
    weights (``blocks``: pairs of block indices) must have been dropped alike.
    """
    evaluated, trained = (probed.get("eval"), probed.get("train")) if isinstance(probed, dict) else (None, None)
    require(isinstance(evaluated, torch.Tensor) and isinstance(trained, torch.Tensor), "no outputs to check", what=what)
    require(evaluated.shape == trained.shape and evaluated.dim() == 3 and evaluated.shape[-1] % n == 0
            and evaluated.is_floating_point(), f"the output has shape {tuple(trained.shape)}", what=what)
    shown, dropped_out = evaluated.double().split(n, dim=-1), trained.double().split(n, dim=-1)
    for first, second in blocks:
        require(torch.allclose(dropped_out[first], dropped_out[second], atol=1e-5),
                "the two copies of the weights differ: dropout did not act on the attention weights", what=what,
                hint="Apply self.dropout to the attention weights (after softmax), then multiply by the values.")
    weights, after = torch.cat(shown, dim=-1), torch.cat(dropped_out, dim=-1)
    require(not torch.allclose(after, weights, atol=1e-6), "in training mode the weights are unchanged: no dropout",
            what=what, hint="Call self.dropout on the attention weights in forward.")
    kept, dropped, visible = (after - weights / (1 - p)).abs() < 1e-4, after.abs() < 1e-6, weights.abs() > 1e-6
    require(bool((kept | dropped).all()), "some weights are neither 0 nor scaled by 1 / (1 - p)", what=what,
            hint="Dropout(p) zeroes each weight with probability p and multiplies the others by 1 / (1 - p); "
                 "use self.dropout = nn.Dropout(dropout).")
    require(bool((dropped & visible).any()) and bool((kept & visible).any()),
            "dropout should drop some weights and keep others", what=what)
