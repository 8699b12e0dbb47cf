"""Self-attention with trainable weights, version 1.

*Build a Large Language Model (From Scratch)*, section 3.4 ("Implementing
self-attention with trainable weights"): 3.4.1 computes the attention weights step by
step, 3.4.2 packs the computation into a compact Python class.

This is *scaled dot-product attention*, the mechanism used in the original
transformer and in GPT models. Compared with section 3.3 there are three trainable
weight matrices, ``W_query``, ``W_key`` and ``W_value``, each of shape
``(d_in, d_out)``. They project every input vector x(i) to

* a query vector ``q(i) = x(i) W_query`` (what token i is looking for),
* a key vector ``k(i) = x(i) W_key`` (what token i offers to be matched against),
* a value vector ``v(i) = x(i) W_value`` (what token i contributes to the result).

The attention score of query i and key j is ``q(i) . k(j)``. Before softmax the
scores are divided by the square root of the key dimension ``d_k`` (here ``d_out``):
with large dimensions the dot products become large, softmax then behaves almost like
a step function and its gradients become tiny, and the scaling prevents that. The
context vector of token i is the sum of the value vectors weighted by the attention
weights of row i.

Textbook check (``torch.manual_seed(123)``, then ``SelfAttention_v1(3, 2)``, applied
to the six-token ``inputs``): the second row of the output is ``[0.3061, 0.8210]``.
"""

import torch
from torch import nn


class SelfAttention_v1(nn.Module):
    """Compact self-attention with weight matrices stored as ``nn.Parameter``.

    ``__init__(d_in, d_out)`` creates three trainable matrices, in exactly this
    order: ``self.W_query``, ``self.W_key``, ``self.W_value``, each
    ``nn.Parameter(torch.rand(d_in, d_out))``. The order and the use of
    ``torch.rand`` matter: they decide which random numbers each matrix receives, so
    with ``torch.manual_seed(123)`` a correct class reproduces the textbook values.
    Create no other parameters.

    ``forward(x)`` takes the token embeddings of one sequence and returns one context
    vector per token (scaled dot-product attention, rows of the attention weights
    summing to 1).
    """

    def __init__(self, d_in, d_out):
        """Create ``W_query``, ``W_key``, ``W_value`` (in that order).

        Args:
            d_in: size of each input embedding.
            d_out: size of each query, key, value and context vector.
        """
        super().__init__()
        ### BEGIN SOLUTION
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))
        ### END SOLUTION

    def forward(self, x):
        """Compute the context vectors of all tokens.

        Steps: project ``x`` to keys, queries and values with the three matrices;
        compute the attention scores of every query against every key; divide the
        scores by ``sqrt(d_k)`` (``d_k`` = size of a key vector) and apply softmax
        along the last dimension; multiply the attention weights by the values.

        Args:
            x: tensor of shape ``(num_tokens, d_in)``.

        Returns:
            Tensor of shape ``(num_tokens, d_out)``.
        """
        ### BEGIN SOLUTION
        keys = x @ self.W_key
        queries = x @ self.W_query
        values = x @ self.W_value
        attn_scores = queries @ keys.T  # (num_tokens, num_tokens)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values
        ### END SOLUTION
