"""Masked softmax: attention that ignores padding.

*Dive into Deep Learning*, section 11.3 ("Attention Scoring Functions", the masked
softmax operation; section 10.3 in the 0.17 edition, whose API this course follows).

Sequences in a minibatch have different lengths, so the shorter ones are padded with
filler tokens up to a common length. Padding carries no meaning and must not receive
any attention. A *valid length* says how many leading positions of a sequence are
real; every key position at or beyond it must get attention weight exactly 0.

The trick: before softmax, replace the scores of the invalid positions by a very large
negative number (``-1e6``). Its exponential underflows to 0, so softmax gives those
positions weight 0 and spreads the probability over the valid ones only. (A finite
``-1e6`` rather than ``-inf`` keeps a row well defined even if it had no valid
position at all.)

``valid_lens`` comes in two forms for a score tensor ``X`` of shape
``(batch_size, num_queries, num_keys)``:

* 1-D, shape ``(batch_size,)``: one valid length per batch item, shared by all of its
  queries;
* 2-D, shape ``(batch_size, num_queries)``: one valid length per query.

Example: for ``X`` of shape ``(2, 2, 4)`` and ``valid_lens = torch.tensor([2, 3])``,
the rows of the first item have nonzero weights only in their first 2 columns and
those of the second item only in their first 3 columns.
"""

import torch
from torch import nn


def sequence_mask(X, valid_len, value=0):
    """Replace the entries of each row beyond its valid length by ``value``.

    Row ``r`` of ``X`` keeps positions ``0 .. valid_len[r] - 1``; every position
    ``>= valid_len[r]`` is set to ``value``. Build the boolean mask of shape
    ``(n, maxlen)`` by comparing a range of column indices with the valid lengths
    (broadcasting), on ``X``'s device, with no Python loop, and index ``X`` with
    it. As in the book, ``X`` may be modified in place; it is also returned, with
    ``X``'s dtype.

    Example (from the book): ``sequence_mask(torch.tensor([[1, 2, 3], [4, 5, 6]]),
    torch.tensor([1, 2]))`` gives ``[[1, 0, 0], [4, 5, 0]]``. ``X`` may have more
    axes after the first two, as in ``sequence_mask(torch.ones(2, 3, 4),
    torch.tensor([1, 2]), value=-1)``: then the whole entry ``X[r, p]`` (here a
    vector of 4 numbers) of every masked position ``p`` is set to ``value``.

    Args:
        X: tensor of shape ``(n, maxlen)`` or ``(n, maxlen, ...)``.
        valid_len: 1-D tensor of shape ``(n,)`` with the valid length of each row.
        value: what to write into the masked positions.

    Returns:
        Tensor of the same shape as ``X``, the masked ``X``.
    """
    # TODO: write this part (see the docstring).
    raise NotImplementedError("sequence_mask is not written yet")


def masked_softmax(X, valid_lens):
    """Softmax over the last axis that gives weight 0 beyond the valid lengths.

    * ``valid_lens is None``: plain softmax over the last dimension.
    * Otherwise turn ``valid_lens`` into one valid length per row of the flattened
      ``(batch_size * num_queries, num_keys)`` scores: a 1-D ``valid_lens`` gives
      each batch item's length to each of its ``num_queries`` rows (repeat every
      entry, do not tile the whole vector); a 2-D ``valid_lens`` already has one
      length per query and only needs flattening. Mask the flattened scores with
      ``sequence_mask`` using ``value=-1e6``, restore the original shape, and apply
      softmax over the last dimension.

    Args:
        X: scores of shape ``(batch_size, num_queries, num_keys)``.
        valid_lens: ``None``, a 1-D tensor of shape ``(batch_size,)`` or a 2-D tensor
            of shape ``(batch_size, num_queries)``.

    Returns:
        Tensor of the same shape as ``X``; each row sums to 1 and is 0 at every
        masked position.
    """
    # TODO: write this part (see the docstring).
    raise NotImplementedError("masked_softmax is not written yet")
