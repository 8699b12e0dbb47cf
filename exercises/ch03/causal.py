"""Hiding future words with causal attention.

*Build a Large Language Model (From Scratch)*, section 3.5 ("Hiding future words with
causal attention"): 3.5.1 applies a causal attention mask, 3.5.2 adds dropout to the
attention weights, 3.5.3 builds the compact ``CausalAttention`` class.

A language model like GPT produces text one token at a time, so when it computes the
context vector of token i it may only look at tokens 1..i, never at later tokens.
*Causal* (or *masked*) attention enforces this: in the ``(n, n)`` matrix of attention
weights, row i (the query) keeps columns 0..i and every entry above the diagonal
becomes 0. Each row must still sum to 1.

There are two ways to get there, and they give the same result:

1. Compute ordinary softmax weights, multiply them by a lower-triangular matrix of
   ones (zeroing the future), then divide every row by its new sum.
2. More efficient: before softmax, set every score above the diagonal to ``-inf``.
   Since ``exp(-inf) = 0``, softmax gives those positions weight 0 and normalises
   the remaining ones in a single step.

Masking before softmax means no information leaks from future tokens: the
renormalisation only ever sees the allowed scores.

Dropout (section 3.5.2) randomly zeroes attention weights during training and scales
the kept ones by ``1 / (1 - p)``; it is switched off by ``model.eval()``. In
``CausalAttention`` it is applied to the attention weights (after softmax), not to
the inputs or outputs.

Textbook check (``torch.manual_seed(123)``, ``CausalAttention(3, 2, 6, 0.0)`` on
``batch = torch.stack((inputs, inputs))``): each batch item gives the rows
``[-0.4519, 0.2216], [-0.5874, 0.0058], ..., [-0.5299, -0.1081]``.

The helper functions work on any tensor whose last two dimensions are an ``(n, n)``
attention matrix (leading batch dimensions broadcast).
"""

import torch
from torch import nn


def simple_causal_mask(context_length):
    """The mask of allowed positions: ones on and below the diagonal (section 3.5.1).

    Entry ``[i, j]`` is 1 when token i may attend to token j (``j <= i``) and 0 for
    future tokens (``j > i``).

    Args:
        context_length: the number of tokens ``n``.

    Returns:
        Float tensor of shape ``(n, n)``, lower-triangular ones.
    """
    # TODO: write this part (see the docstring).
    raise NotImplementedError("simple_causal_mask is not written yet")


def mask_and_renormalize(attn_weights):
    """Zero the weights of future tokens and renormalise each row (section 3.5.1).

    This is the first, two-step approach: multiply the (already softmax-normalised)
    weights by the lower-triangular mask of ones, then divide each row by its sum so
    it sums to 1 again. Build the mask from the size of the last dimension of
    ``attn_weights``; do not change the input tensor.

    Args:
        attn_weights: tensor of shape ``(..., n, n)`` with non-negative entries.

    Returns:
        Tensor of shape ``(..., n, n)``: zeros above the diagonal, rows summing to 1.
    """
    # TODO: write this part (see the docstring).
    raise NotImplementedError("mask_and_renormalize is not written yet")


def causal_attention_weights(attn_scores, d_k):
    """Causal attention weights from raw scores in one step (section 3.5.1).

    This is the second, efficient approach: replace every score above the diagonal
    (future tokens) by ``-inf``, then apply ``softmax(scores / sqrt(d_k))`` along the
    last dimension. Do not change the input tensor (use the out-of-place version of
    the fill operation).

    Args:
        attn_scores: unnormalised scores (queries times keys), shape ``(..., n, n)``.
        d_k: size of the key vectors, used for the ``1 / sqrt(d_k)`` scaling.

    Returns:
        Tensor of shape ``(..., n, n)``: exact zeros above the diagonal, rows summing
        to 1.
    """
    # TODO: write this part (see the docstring).
    raise NotImplementedError("causal_attention_weights is not written yet")


class CausalAttention(nn.Module):
    """Compact causal self-attention for batches of sequences (section 3.5.3).

    ``__init__(d_in, d_out, context_length, dropout, qkv_bias=False)`` must create,
    in this order:

    1. ``self.W_query``, ``self.W_key``, ``self.W_value``: each
       ``nn.Linear(d_in, d_out, bias=qkv_bias)`` (this order decides the random
       initial weights, so the seeded textbook values depend on it);
    2. ``self.dropout``: ``nn.Dropout(dropout)``;
    3. the causal mask, stored with
       ``self.register_buffer("mask", torch.triu(torch.ones(context_length,
       context_length), diagonal=1))``. It has ones *above* the diagonal, i.e. at
       the positions to hide. A buffer is not a trainable parameter, but it moves
       with the module to another device (``.to("cuda")``) and is saved in the
       ``state_dict``.

    ``forward(x)``: like ``SelfAttention_v2`` but batched, with the causal mask and
    dropout. The mask is built for ``context_length`` tokens, the longest supported
    sequence; an input may be shorter, so use only the top-left
    ``[:num_tokens, :num_tokens]`` part of the mask.
    """

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        """Create the projections, the dropout layer and the mask buffer.

        Args:
            d_in: size of each input embedding.
            d_out: size of each output context vector.
            context_length: maximum number of tokens supported (size of the mask).
            dropout: probability of zeroing an attention weight during training.
            qkv_bias: whether the query, key and value layers have a bias term.
        """
        super().__init__()
        # TODO: write this part (see the docstring).
        raise NotImplementedError("CausalAttention.__init__ is not written yet")

    def forward(self, x):
        """Causal scaled dot-product attention over a batch.

        Steps: project to keys, queries and values; scores = queries times keys
        transposed (transpose the token and feature dimensions, keep the batch
        dimension first); set the scores at masked positions (mask sliced to
        ``[:num_tokens, :num_tokens]``) to ``-inf``; softmax of
        ``scores / sqrt(d_k)`` along the last dimension; apply ``self.dropout`` to
        the attention weights; multiply by the values.

        Args:
            x: tensor of shape ``(batch, num_tokens, d_in)``, with
                ``num_tokens <= context_length``.

        Returns:
            Tensor of shape ``(batch, num_tokens, d_out)``.
        """
        # TODO: write this part (see the docstring).
        raise NotImplementedError("CausalAttention.forward is not written yet")
