"""Attention scoring functions: additive and scaled dot-product attention.

*Dive into Deep Learning*, section 11.3 ("Attention Scoring Functions"; section 10.3
in the 0.17 edition, whose API this course follows).

Attention pooling computes, for every query, a weighted average of the values; the
weights come from a *scoring function* a(q, k) between the query and each key, turned
into probabilities with (masked) softmax. This module builds the two classic scoring
functions, both as ``nn.Module`` classes with the same interface:

``forward(queries, keys, values, valid_lens=None)`` with

* ``queries``: ``(batch_size, num_queries, query_size)``,
* ``keys``: ``(batch_size, num_kv_pairs, key_size)``,
* ``values``: ``(batch_size, num_kv_pairs, value_size)``,
* ``valid_lens``: ``None`` (every key counts), 1-D ``(batch_size,)`` (one valid
  length per batch item, shared by all of its queries) or 2-D ``(batch_size,
  num_queries)`` (one valid length per query), exactly as in ``masked_softmax``:
  key positions at or beyond the valid length get weight exactly 0 (pass the scores
  and ``valid_lens`` to ``masked_softmax``, which writes ``-1e6`` into those scores
  before softmax),

returning ``(batch_size, num_queries, value_size)``. Both store the attention weights
of the last call in ``self.attention_weights`` (shape ``(batch_size, num_queries,
num_kv_pairs)``, *before* dropout) so they can be inspected or plotted, and apply
dropout to those weights before multiplying them with the values using batched
matrix multiplication (``torch.bmm``).

1. **Additive attention** works when queries and keys have different sizes. Both are
   projected to ``num_hiddens`` features, added, passed through ``tanh`` and reduced
   to one number by a vector ``w_v``:
   ``a(q, k) = w_v^T tanh(W_q q + W_k k)``. It is a one-hidden-layer MLP on the pair
   (q, k).
2. **Scaled dot-product attention** needs queries and keys of the same size ``d`` and
   is cheaper: ``a(q, k) = q^T k / sqrt(d)``. If the entries of q and k are
   independent with mean 0 and variance 1, their dot product has variance ``d``;
   dividing by ``sqrt(d)`` keeps the scores at variance 1 whatever the size, so
   softmax does not saturate.

Book example: with ``keys = torch.ones((2, 10, 2))``, ``values =
torch.arange(40, dtype=torch.float32).reshape(1, 10, 4).repeat(2, 1, 1)`` and
``valid_lens = torch.tensor([2, 6])``, both scorers in eval mode return
``[[[2, 3, 4, 5]], [[10, 11, 12, 13]]]`` for any single query per batch item: all
keys are equal, so the weights are uniform over the valid positions.
"""

import math

import torch
from torch import nn

# masked_softmax is YOUR function from masked_softmax.py, which sits next to this file.
# Until masked_softmax.py is finished, calling either scorer raises the
# NotImplementedError of your masked_softmax stub. The grader grades scoring.py against
# the reference masked_softmax, so a mistake in masked_softmax.py costs points only once.
from masked_softmax import masked_softmax


class AdditiveAttention(nn.Module):
    """Additive attention, ``a(q, k) = w_v^T tanh(W_q q + W_k k)``.

    ``__init__(key_size, query_size, num_hiddens, dropout)`` creates, in exactly this
    order (it fixes the random initial weights): ``self.W_k =
    nn.Linear(key_size, num_hiddens, bias=False)``, ``self.W_q =
    nn.Linear(query_size, num_hiddens, bias=False)``, ``self.w_v =
    nn.Linear(num_hiddens, 1, bias=False)`` and ``self.dropout =
    nn.Dropout(dropout)``.

    ``forward``: project queries and keys; add every projected query to every
    projected key by broadcasting (insert a key axis into the queries and a query
    axis into the keys, giving ``(batch_size, num_queries, num_kv_pairs,
    num_hiddens)``); apply ``tanh``; ``w_v`` reduces the last axis to size 1, which
    is then removed, giving scores ``(batch_size, num_queries, num_kv_pairs)``;
    masked softmax gives ``self.attention_weights``; return dropout of the weights
    batch-multiplied with the values.
    """

    def __init__(self, key_size, query_size, num_hiddens, dropout):
        """Create ``W_k``, ``W_q``, ``w_v`` and ``dropout`` (in that order).

        Args:
            key_size: number of features of each key.
            query_size: number of features of each query.
            num_hiddens: size of the hidden layer.
            dropout: dropout probability on the attention weights.
        """
        super().__init__()
        # TODO: write this part (see the docstring).
        raise NotImplementedError("AdditiveAttention.__init__ is not written yet")

    def forward(self, queries, keys, values, valid_lens=None):
        """Additive attention pooling.

        Args:
            queries: ``(batch_size, num_queries, query_size)``.
            keys: ``(batch_size, num_kv_pairs, key_size)``.
            values: ``(batch_size, num_kv_pairs, value_size)``.
            valid_lens: ``None``, ``(batch_size,)`` or ``(batch_size, num_queries)``.

        Returns:
            Tensor of shape ``(batch_size, num_queries, value_size)``; also sets
            ``self.attention_weights`` to ``(batch_size, num_queries,
            num_kv_pairs)``.
        """
        # TODO: write this part (see the docstring).
        raise NotImplementedError("AdditiveAttention.forward is not written yet")


class DotProductAttention(nn.Module):
    """Scaled dot-product attention, ``a(q, k) = q^T k / sqrt(d)``.

    ``__init__(dropout)`` creates ``self.dropout = nn.Dropout(dropout)``; there are
    no trainable parameters.

    ``forward``: ``d`` is the size of the last dimension of the queries (which equals
    that of the keys); scores are the batched products of the queries with the keys
    transposed on their last two axes, divided by ``sqrt(d)``; masked softmax gives
    ``self.attention_weights``; return dropout of the weights batch-multiplied with
    the values.
    """

    def __init__(self, dropout):
        """Create the dropout layer.

        Args:
            dropout: dropout probability on the attention weights.
        """
        super().__init__()
        # TODO: write this part (see the docstring).
        raise NotImplementedError("DotProductAttention.__init__ is not written yet")

    def forward(self, queries, keys, values, valid_lens=None):
        """Scaled dot-product attention pooling.

        Args:
            queries: ``(batch_size, num_queries, d)``.
            keys: ``(batch_size, num_kv_pairs, d)``.
            values: ``(batch_size, num_kv_pairs, value_size)``.
            valid_lens: ``None``, ``(batch_size,)`` or ``(batch_size, num_queries)``.

        Returns:
            Tensor of shape ``(batch_size, num_queries, value_size)``; also sets
            ``self.attention_weights`` to ``(batch_size, num_queries,
            num_kv_pairs)``.
        """
        # TODO: write this part (see the docstring).
        raise NotImplementedError("DotProductAttention.forward is not written yet")
