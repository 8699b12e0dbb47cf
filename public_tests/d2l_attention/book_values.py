"""Inputs and values of the examples in *Dive into Deep Learning*'s attention chapter."""

import torch


def generated(seed, *shape, normal=False):
    """Inputs other than the book's, the same on every machine."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator) if normal else torch.rand(*shape, generator=generator)


# sequence_mask(SEQ_X, SEQ_LENS) is SEQ_MASKED: entries at or beyond each row's valid length become 0.
SEQ_X = torch.tensor([[1, 2, 3], [4, 5, 6]])
SEQ_LENS = torch.tensor([1, 2])
SEQ_MASKED = torch.tensor([[1, 0, 0], [4, 5, 0]])

# Masked softmax: the book's (2, 2, 4) random scores with valid lengths [2, 3].
SCORES = generated(1, 2, 2, 4)
VALID_LENS = torch.tensor([2, 3])

# Scoring: all keys are equal, so the weights are uniform over the valid positions.
KEYS = torch.ones(2, 10, 2)
VALUES = torch.arange(40, dtype=torch.float32).reshape(1, 10, 4).repeat(2, 1, 1)
SCORING_VALID_LENS = torch.tensor([2, 6])
ADDITIVE_QUERIES = generated(2, 2, 1, 20, normal=True)
DOT_QUERIES = generated(3, 2, 1, 2, normal=True)
POOLED = torch.tensor([[[2.0, 3.0, 4.0, 5.0]], [[10.0, 11.0, 12.0, 13.0]]])

# Multi-head attention: (2, 4, 100) queries, (2, 6, 100) keys and values, valid lengths [3, 2].
MHA_QUERIES = generated(4, 2, 4, 100)
MHA_KEYS = generated(5, 2, 6, 100)
MHA_VALID_LENS = torch.tensor([3, 2])
MHA_OUTPUT_SHAPE = (2, 4, 100)

# Bahdanau attention: Seq2SeqEncoder(10, 8, 16, 2) and Seq2SeqAttentionDecoder(10, 8, 16, 2) on zeros (4, 7).
SEQ2SEQ_X = torch.zeros((4, 7), dtype=torch.long)
SEQ2SEQ_OUTPUT_SHAPE = (4, 7, 10)
SEQ2SEQ_STATE_SHAPES = ((4, 7, 16), (2, 4, 16))  # state[0] (the encoder's outputs, batch first), state[1] (hidden state)
