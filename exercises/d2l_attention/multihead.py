"""Multi-head attention.

*Dive into Deep Learning*, section 11.5 ("Multi-Head Attention"; section 10.5 in the
0.17 edition, whose API this course follows).

A single attention pooling can capture only one kind of dependency. Multi-head
attention learns ``h`` different linear projections of the queries, keys and values,
runs ``h`` attention poolings (the *heads*) in parallel, concatenates the ``h``
outputs and mixes them with a final linear layer ``W_o``.

To run the heads in parallel rather than in a loop, choose each head's size as
``num_hiddens / num_heads``: then one Linear layer per input (``W_q``, ``W_k``,
``W_v``) produces all heads at once, and reshaping moves the heads into the batch
dimension. Scaled dot-product attention then handles ``batch_size * num_heads``
independent problems with one batched matrix multiplication, and reshaping back
concatenates the heads. Two helpers do the reshaping:

* ``transpose_qkv``: ``(batch_size, n, num_hiddens)`` ->
  ``(batch_size * num_heads, n, num_hiddens / num_heads)``;
* ``transpose_output``: its exact inverse.

In the flattened batch dimension the ``num_heads`` heads of batch item 0 come first,
then those of item 1, and so on (row ``b * num_heads + k`` is head ``k`` of item
``b``). That is why the valid lengths must be repeated ``num_heads`` times entry by
entry (``[3, 2]`` becomes ``[3, 3, ..., 2, 2, ...]``), not tiled.

Book example: ``MultiHeadAttention(100, 100, 100, 100, 5, 0.5)`` in eval mode maps
queries ``(2, 4, 100)`` and keys/values ``(2, 6, 100)`` with
``valid_lens = torch.tensor([3, 2])`` to an output of shape ``(2, 4, 100)``.
"""

import torch
from torch import nn

# DotProductAttention is YOUR class from scoring.py (section 11.3), which sits next to
# this file. Until scoring.py is finished, using MultiHeadAttention raises the
# NotImplementedError of your DotProductAttention stub. The grader grades multihead.py
# against the reference DotProductAttention, so a mistake in scoring.py costs points
# only once.
from scoring import DotProductAttention


def transpose_qkv(X, num_heads):
    """Split the last axis into heads and move the heads into the batch axis.

    Split the ``num_hiddens`` features into ``num_heads`` consecutive groups (head k
    gets features ``k * num_hiddens / num_heads`` up to, not including,
    ``(k + 1) * num_hiddens / num_heads``), bring the head axis in front of the
    sequence axis, and merge it with the batch axis so that row
    ``b * num_heads + k`` of the result is head ``k`` of batch item ``b``.

    Args:
        X: tensor of shape ``(batch_size, n, num_hiddens)``; ``num_hiddens`` must be
            divisible by ``num_heads``.
        num_heads: number of heads.

    Returns:
        Tensor of shape ``(batch_size * num_heads, n, num_hiddens / num_heads)``.
    """
    # TODO: write this part (see the docstring).
    raise NotImplementedError("transpose_qkv is not written yet")


def transpose_output(X, num_heads):
    """Reverse ``transpose_qkv``: concatenate the heads back on the feature axis.

    ``transpose_output(transpose_qkv(X, h), h)`` must equal ``X``.

    Args:
        X: tensor of shape ``(batch_size * num_heads, n, head_size)``.
        num_heads: number of heads.

    Returns:
        Tensor of shape ``(batch_size, n, num_heads * head_size)``.
    """
    # TODO: write this part (see the docstring).
    raise NotImplementedError("transpose_output is not written yet")


class MultiHeadAttention(nn.Module):
    """Multi-head attention with scaled dot-product heads.

    ``__init__(key_size, query_size, value_size, num_hiddens, num_heads, dropout,
    bias=False)`` keeps ``self.num_heads`` and creates, in exactly this order (it
    fixes the random initial weights): ``self.attention =
    DotProductAttention(dropout)``, ``self.W_q = nn.Linear(query_size, num_hiddens,
    bias=bias)``, ``self.W_k = nn.Linear(key_size, num_hiddens, bias=bias)``,
    ``self.W_v = nn.Linear(value_size, num_hiddens, bias=bias)`` and ``self.W_o =
    nn.Linear(num_hiddens, num_hiddens, bias=bias)``. ``num_hiddens`` must be
    divisible by ``num_heads``.

    ``forward``: project queries, keys and values with ``W_q``, ``W_k``, ``W_v`` and
    split each into heads with ``transpose_qkv``; if ``valid_lens`` is not ``None``,
    repeat each of its entries ``num_heads`` times along axis 0 so that every head
    of a batch item gets that item's valid lengths; run ``self.attention``; merge the
    heads with ``transpose_output``; apply ``W_o``.
    """

    def __init__(self, key_size, query_size, value_size, num_hiddens, num_heads,
                 dropout, bias=False):
        """Create ``attention``, ``W_q``, ``W_k``, ``W_v``, ``W_o`` (in that order).

        Args:
            key_size: number of features of each key.
            query_size: number of features of each query.
            value_size: number of features of each value.
            num_hiddens: total size of all heads together, and of the output.
            num_heads: number of heads.
            dropout: dropout probability on the attention weights.
            bias: whether the four Linear layers have a bias term.
        """
        super().__init__()
        # TODO: write this part (see the docstring).
        raise NotImplementedError("MultiHeadAttention.__init__ is not written yet")

    def forward(self, queries, keys, values, valid_lens):
        """Multi-head attention pooling.

        Args:
            queries: ``(batch_size, num_queries, query_size)``.
            keys: ``(batch_size, num_kv_pairs, key_size)``.
            values: ``(batch_size, num_kv_pairs, value_size)``.
            valid_lens: ``None``, ``(batch_size,)`` or ``(batch_size, num_queries)``.

        Returns:
            Tensor of shape ``(batch_size, num_queries, num_hiddens)``.
        """
        # TODO: write this part (see the docstring).
        raise NotImplementedError("MultiHeadAttention.forward is not written yet")
