"""Self-attention with trainable weights, version 2 (``nn.Linear`` layers).

*Build a Large Language Model (From Scratch)*, section 3.4.2 ("Implementing a compact
self-attention Python class"), listing 3.2.

The computation is the same scaled dot-product attention as ``SelfAttention_v1``, but
the projections are ``nn.Linear`` layers instead of hand-made parameter matrices.
``nn.Linear`` does the matrix multiplication for us, can add an optional bias, and
uses a better weight initialisation than ``torch.rand``, which makes training more
stable.

Note that ``nn.Linear(d_in, d_out)`` stores its weight with shape ``(d_out, d_in)``,
the transpose of the ``(d_in, d_out)`` matrices of version 1, and computes
``x @ weight.T + bias``. Exercise 3.1 (``weight_transfer.py``) uses this fact.

Textbook check (``torch.manual_seed(789)``, then ``SelfAttention_v2(3, 2)``, applied
to the six-token ``inputs``): the first row of the output is ``[-0.0739, 0.0713]``.
"""

import torch
from torch import nn


class SelfAttention_v2(nn.Module):
    """Compact self-attention built from three ``nn.Linear`` projections.

    ``__init__(d_in, d_out, qkv_bias=False)`` creates, in exactly this order,
    ``self.W_query``, ``self.W_key``, ``self.W_value``, each
    ``nn.Linear(d_in, d_out, bias=qkv_bias)``. The order decides which random initial
    weights each layer receives, so it must be kept for the seeded textbook values to
    reproduce. Create no other parameters.

    ``forward(x)`` computes the same thing as ``SelfAttention_v1.forward``.
    """

    def __init__(self, d_in, d_out, qkv_bias=False):
        """Create ``W_query``, ``W_key``, ``W_value`` (in that order).

        Args:
            d_in: size of each input embedding.
            d_out: size of each query, key, value and context vector.
            qkv_bias: whether the three Linear layers have a bias term.
        """
        super().__init__()
        ### BEGIN SOLUTION
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        ### END SOLUTION

    def forward(self, x):
        """Compute the context vectors of all tokens.

        Apply the three layers to get keys, queries and values, compute all
        attention scores, scale them by ``1 / sqrt(d_k)``, apply softmax along the
        last dimension, and weight the values.

        Args:
            x: tensor of shape ``(num_tokens, d_in)``.

        Returns:
            Tensor of shape ``(num_tokens, d_out)``.
        """
        ### BEGIN SOLUTION
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.T  # (num_tokens, num_tokens)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values
        ### END SOLUTION
