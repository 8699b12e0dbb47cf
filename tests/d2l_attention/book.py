"""Examples from the attention chapter of *Dive into Deep Learning*, with what they print.

Trusted side only: never sent to the sandbox (probes receive inputs, never these values).
Where the book draws random inputs we draw them from a fixed generator instead, so every
run grades the same numbers.
"""

import torch

from grader.book import book_values

# The book's own examples, shared with the public tests: their one place is public_tests/d2l_attention/book_values.py.
_BOOK = book_values("d2l_attention")


def generator(seed: int) -> torch.Generator:
    """A private random stream: drawing inputs never touches torch's global seed."""
    return torch.Generator().manual_seed(seed)


def random_inputs(seed: int, *shape: int) -> torch.Tensor:
    """Standard-normal inputs no book printed: behaviour checks use them so hard-coded answers fail."""
    return torch.randn(*shape, generator=generator(seed))


def random_lens(seed: int, high: int, *shape: int) -> torch.Tensor:
    """Valid lengths in ``1 .. high`` (int64, as ``torch.tensor([2, 3])`` is)."""
    return torch.randint(1, high + 1, shape, generator=generator(seed))


# -- masked softmax ---------------------------------------------------------------------------
# sequence_mask(torch.tensor([[1, 2, 3], [4, 5, 6]]), torch.tensor([1, 2]))
SEQ_X, SEQ_LENS, SEQ_MASKED = _BOOK.SEQ_X, _BOOK.SEQ_LENS, _BOOK.SEQ_MASKED
# sequence_mask(torch.ones(2, 3, 4), torch.tensor([1, 2]), value=-1)
SEQ_ONES = torch.ones(2, 3, 4)
SEQ_ONES_MASKED = torch.tensor([[[1.0] * 4, [-1.0] * 4, [-1.0] * 4],
                                [[1.0] * 4, [1.0] * 4, [-1.0] * 4]])
# masked_softmax(torch.rand(2, 2, 4), ...) with both forms of valid_lens
SOFTMAX_X = torch.rand(2, 2, 4, generator=generator(2024))
SOFTMAX_LENS_1D = torch.tensor([2, 3])
SOFTMAX_LENS_2D = torch.tensor([[1, 3], [2, 4]])

# -- scoring functions --------------------------------------------------------------------------
KEYS, VALUES, VALID_LENS = _BOOK.KEYS, _BOOK.VALUES, _BOOK.SCORING_VALID_LENS
ADDITIVE_QUERIES = torch.normal(0, 1, (2, 1, 20), generator=generator(7))  # key_size 2, query_size 20
DOT_QUERIES = torch.normal(0, 1, (2, 1, 2), generator=generator(8))
# Both scorers, in eval mode, for any queries (all keys are equal: uniform weights).
POOLED = _BOOK.POOLED
ADDITIVE_ARGS = (2, 20, 8, 0.1)  # key_size, query_size, num_hiddens, dropout

# -- positional encoding ------------------------------------------------------------------------
ENCODING_DIM, NUM_STEPS = 32, 60  # the book plots columns 6 to 9 of the first 60 rows


def encoding_formula(positions, num_hiddens: int) -> torch.Tensor:
    """``P[i, 2j] = sin(i / 10000^(2j/d))``, ``P[i, 2j+1] = cos(...)`` in float64, rows ``positions``."""
    i = torch.as_tensor(positions, dtype=torch.float64).reshape(-1, 1)
    angles = i / torch.pow(10000.0, torch.arange(0, num_hiddens, 2, dtype=torch.float64) / num_hiddens)
    table = torch.zeros(len(i), num_hiddens, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles)
    return table


# -- multi-head attention ------------------------------------------------------------------------
NUM_HIDDENS, NUM_HEADS = 100, 5
BATCH_SIZE, NUM_QUERIES, NUM_KVPAIRS = 2, 4, 6
MHA_VALID_LENS = _BOOK.MHA_VALID_LENS
MHA_ARGS = (NUM_HIDDENS, NUM_HIDDENS, NUM_HIDDENS, NUM_HIDDENS, NUM_HEADS, 0.5)
MHA_OUTPUT_SHAPE = _BOOK.MHA_OUTPUT_SHAPE  # (BATCH_SIZE, NUM_QUERIES, NUM_HIDDENS)

# -- Bahdanau attention in a sequence-to-sequence model -------------------------------------------
# Seq2SeqEncoder(10, 8, 16, 2) and Seq2SeqAttentionDecoder(10, 8, 16, 2) in eval mode on
# X = torch.zeros((4, 7), dtype=torch.long), with enc_valid_lens None.
SEQ2SEQ_ARGS = (10, 8, 16, 2)  # vocab_size, embed_size, num_hiddens, num_layers
SEQ2SEQ_X, SEQ2SEQ_OUTPUT_SHAPE = _BOOK.SEQ2SEQ_X, _BOOK.SEQ2SEQ_OUTPUT_SHAPE
SEQ2SEQ_STATE_SHAPES = _BOOK.SEQ2SEQ_STATE_SHAPES  # state[0] (enc_outputs), state[1] (hidden_state)


def random_tokens(seed: int, vocab_size: int, *shape: int) -> torch.Tensor:
    """Token ids in ``0 .. vocab_size - 1`` (int64)."""
    return torch.randint(0, vocab_size, shape, generator=generator(seed))
