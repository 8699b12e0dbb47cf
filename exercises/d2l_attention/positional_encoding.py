"""Sinusoidal positional encoding.

*Dive into Deep Learning*, section 11.6.3 ("Positional Encoding", in "Self-Attention
and Positional Encoding"; section 10.6.3 in the 0.17 edition, whose API this course
follows).

Self-attention treats its input as a *set*: permuting the tokens permutes the outputs
in the same way, so the model cannot tell "dog bites man" from "man bites dog". To give
it the order of the tokens, we add to each token embedding a vector that depends only
on its position. The transformer uses a fixed (not learned) table ``P`` in which
position ``i`` and feature pair ``(2j, 2j + 1)`` hold

    P[i, 2j]     = sin(i / 10000^(2j / d))
    P[i, 2j + 1] = cos(i / 10000^(2j / d))

with ``d = num_hiddens``. Each pair of columns oscillates at its own frequency,
``omega_j = 1 / 10000^(2j / d)``, from fast (j = 0) to very slow, much like the bits of
a binary counter change at different rates, so every position gets a distinct
pattern.

Why sine *and* cosine: for any fixed offset ``delta``, the pair
``(sin((i + delta) omega_j), cos((i + delta) omega_j))`` is the pair
``(sin(i omega_j), cos(i omega_j))`` rotated by the angle ``delta * omega_j``:

    [P[i + delta, 2j]    ]   [ cos(delta omega_j)  sin(delta omega_j)] [P[i, 2j]    ]
    [P[i + delta, 2j + 1]] = [-sin(delta omega_j)  cos(delta omega_j)] [P[i, 2j + 1]]

a 2 x 2 rotation matrix that does not depend on ``i`` (expand sin(a + b) and
cos(a + b) to check it). Moving by ``delta`` positions is a fixed linear map, so the
model can easily learn to attend by *relative* position. With sines alone (or with
sine and cosine in each other's place) this exact matrix would not hold.

The input embeddings are usually scaled so they are comparable to the encoding values
in ``[-1, 1]``; dropout is applied to the sum.
"""

import torch
from torch import nn


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal position table to a batch of embeddings, then dropout.

    ``__init__(num_hiddens, dropout, max_len=1000)`` creates ``self.dropout =
    nn.Dropout(dropout)`` first, then the table ``self.P`` as a plain tensor
    attribute (not a parameter: nothing here is trained) of shape
    ``(1, max_len, num_hiddens)``: even feature columns ``0, 2, 4, ...`` hold the
    sines and odd columns ``1, 3, 5, ...`` the cosines of the formula in the module
    docstring, for positions ``0 .. max_len - 1``. Build it without Python loops: a
    column of positions divided by a row of ``10000^(2j / d)`` gives the whole
    ``(max_len, num_hiddens / 2)`` matrix of angles by broadcasting. ``num_hiddens``
    must be even.

    ``forward(X)`` adds the first ``num_steps`` rows of the table to every sequence
    in the batch (moved to ``X``'s device) and applies dropout to the result.
    """

    def __init__(self, num_hiddens, dropout, max_len=1000):
        """Create the dropout layer and the position table ``P``.

        Args:
            num_hiddens: embedding size ``d`` (even).
            dropout: dropout probability applied after adding the encoding.
            max_len: number of positions in the table (longest supported sequence).
        """
        super().__init__()
        # TODO: write this part (see the docstring).
        raise NotImplementedError("PositionalEncoding.__init__ is not written yet")

    def forward(self, X):
        """Add positional information to ``X`` and apply dropout.

        Args:
            X: tensor of shape ``(batch_size, num_steps, num_hiddens)`` with
                ``num_steps <= max_len``.

        Returns:
            Tensor of the same shape as ``X``.
        """
        # TODO: write this part (see the docstring).
        raise NotImplementedError("PositionalEncoding.forward is not written yet")
