"""Extending single-head attention to multi-head attention.

*Build a Large Language Model (From Scratch)*, section 3.6 ("Extending single-head
attention to multi-head attention"): 3.6.1 stacks several single-head attention
layers, 3.6.2 implements multi-head attention with weight splits; plus Exercises 3.2
and 3.3.

One causal attention head learns one way of relating tokens. *Multi-head* attention
runs several heads in parallel, each with its own query, key and value projections,
and concatenates their context vectors, so the model can attend to different kinds of
relationships at the same time.

Two implementations, which compute the same kind of thing:

* ``MultiHeadAttentionWrapper`` literally keeps a list of ``CausalAttention`` heads
  and runs them one after another. With ``d_out`` per head and ``num_heads`` heads,
  the output has ``num_heads * d_out`` features.
* ``MultiHeadAttention`` is the efficient version used in GPT: one Linear layer each
  for queries, keys and values projects to ``d_out`` features, which are then
  *split* into ``num_heads`` heads of ``head_dim = d_out // num_heads`` features by
  reshaping. All heads are then computed together with batched matrix
  multiplications, the head outputs are put back side by side, and a final linear
  layer ``out_proj`` mixes them. Here ``d_out`` is the size of the *whole* output.

Textbook checks (``torch.manual_seed(123)``, ``batch = torch.stack((inputs,
inputs))``): ``MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)(batch)`` has
first row ``[-0.4519, 0.2216, 0.4772, 0.1063]``; ``MultiHeadAttention(3, 2, 6, 0.0,
num_heads=2)(batch)`` has first row ``[0.3190, 0.4858]``.
"""

import torch
from torch import nn

# CausalAttention is YOUR class from causal.py (section 3.5), which sits next to this
# file. Until causal.py is finished, building a MultiHeadAttentionWrapper raises the
# NotImplementedError of your CausalAttention stub. The grader grades mha.py against
# the reference CausalAttention, so a mistake in causal.py costs points only once.
from causal import CausalAttention


class MultiHeadAttentionWrapper(nn.Module):
    """Multi-head attention as a stack of ``CausalAttention`` heads (section 3.6.1).

    ``__init__`` stores in ``self.heads`` an ``nn.ModuleList`` of ``num_heads``
    independent ``CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)``
    modules, created one after another (head 0 first). An ``nn.ModuleList`` (not a
    plain Python list) registers the heads' parameters with the wrapper.

    ``forward`` runs every head on the same input and concatenates the head outputs,
    in head order, along the last (feature) dimension.
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        """Create the ``num_heads`` causal attention heads.

        Args:
            d_in: size of each input embedding.
            d_out: size of each head's context vectors.
            context_length: maximum number of tokens supported.
            dropout: dropout probability on each head's attention weights.
            num_heads: number of heads.
            qkv_bias: whether the query, key and value layers have a bias term.
        """
        super().__init__()
        # TODO: write this part (see the docstring).
        raise NotImplementedError("MultiHeadAttentionWrapper.__init__ is not written yet")

    def forward(self, x):
        """Run all heads and concatenate their outputs.

        Args:
            x: tensor of shape ``(batch, num_tokens, d_in)``.

        Returns:
            Tensor of shape ``(batch, num_tokens, num_heads * d_out)``; features
            ``h * d_out`` to ``(h + 1) * d_out - 1`` come from head ``h``.
        """
        # TODO: write this part (see the docstring).
        raise NotImplementedError("MultiHeadAttentionWrapper.forward is not written yet")


class MultiHeadAttention(nn.Module):
    """Efficient multi-head causal attention with weight splits (section 3.6.2).

    ``__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)``:

    * check with ``assert`` that ``d_out`` is divisible by ``num_heads`` (an
      ``AssertionError`` otherwise), and keep ``self.d_out``, ``self.num_heads`` and
      ``self.head_dim = d_out // num_heads``;
    * then create, in exactly this order (it fixes the random initial weights the
      textbook values depend on): ``self.W_query``, ``self.W_key``,
      ``self.W_value``, each ``nn.Linear(d_in, d_out, bias=qkv_bias)``;
      ``self.out_proj = nn.Linear(d_out, d_out)`` (with its default bias);
      ``self.dropout = nn.Dropout(dropout)``; and the causal mask buffer, registered
      exactly as in ``CausalAttention`` with
      ``self.register_buffer("mask", torch.triu(torch.ones(context_length,
      context_length), diagonal=1))``.

    ``forward(x)``:

    1. project ``x`` to keys, queries and values, each ``(b, num_tokens, d_out)``;
    2. split the last dimension into heads, ``(b, num_tokens, num_heads,
       head_dim)``, then swap the token and head dimensions to get
       ``(b, num_heads, num_tokens, head_dim)``, so each head is a separate batch of
       matrices;
    3. scores = queries times keys transposed on their last two dimensions,
       ``(b, num_heads, num_tokens, num_tokens)``; mask the future with ``-inf``
       (mask sliced to ``[:num_tokens, :num_tokens]``); softmax of
       ``scores / sqrt(head_dim)`` along the last dimension; dropout on the
       attention weights;
    4. weights times values gives ``(b, num_heads, num_tokens, head_dim)``; swap the
       head and token dimensions back and merge the heads into ``d_out`` features
       (head h occupies features ``h * head_dim`` to ``(h + 1) * head_dim - 1``).
       After a transpose the tensor is not contiguous in memory, so make it
       contiguous before ``view`` (or use ``reshape``);
    5. apply ``out_proj``.
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        """Create the projections, output projection, dropout and mask buffer.

        Args:
            d_in: size of each input embedding.
            d_out: size of the output vectors (all heads together); must be
                divisible by ``num_heads``.
            context_length: maximum number of tokens supported.
            dropout: dropout probability on the attention weights.
            num_heads: number of heads.
            qkv_bias: whether the query, key and value layers have a bias term.
        """
        super().__init__()
        # TODO: write this part (see the docstring).
        raise NotImplementedError("MultiHeadAttention.__init__ is not written yet")

    def forward(self, x):
        """Multi-head causal attention over a batch.

        Args:
            x: tensor of shape ``(batch, num_tokens, d_in)``, with
                ``num_tokens <= context_length``.

        Returns:
            Tensor of shape ``(batch, num_tokens, d_out)``.
        """
        # TODO: write this part (see the docstring).
        raise NotImplementedError("MultiHeadAttention.forward is not written yet")


def exercise_3_2_wrapper(d_in, context_length, dropout=0.0):
    """Exercise 3.2: a two-head wrapper whose output vectors are 2-dimensional.

    Return a ``MultiHeadAttentionWrapper`` with ``num_heads=2`` (and the given
    ``d_in``, ``context_length`` and ``dropout``) chosen so that each output context
    vector has 2 features, i.e. ``(batch, num_tokens, d_in)`` maps to
    ``(batch, num_tokens, 2)``. Which argument must change, and to what value?

    With ``torch.manual_seed(123)`` before the call and ``d_in=3``,
    ``context_length=6``, the first row for each batch item of the textbook ``batch``
    is ``[-0.5740, 0.2216]``.

    Args:
        d_in: size of each input embedding.
        context_length: maximum number of tokens supported.
        dropout: dropout probability on the attention weights.

    Returns:
        A ``MultiHeadAttentionWrapper``.
    """
    # TODO: write this part (see the docstring).
    raise NotImplementedError("exercise_3_2_wrapper is not written yet")


def exercise_3_3_gpt2_attention():
    """Exercise 3.3: a multi-head attention module the size of the smallest GPT-2.

    Return a ``MultiHeadAttention`` with 768-dimensional inputs and outputs, a
    context length of 1024 tokens, 12 attention heads and dropout 0.0 (default
    ``qkv_bias``). It has 2,360,064 trainable parameters.

    Returns:
        A ``MultiHeadAttention``.
    """
    # TODO: write this part (see the docstring).
    raise NotImplementedError("exercise_3_3_gpt2_attention is not written yet")
