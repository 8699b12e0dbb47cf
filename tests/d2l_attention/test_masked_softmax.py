"""Section 11.3: the masked softmax operation (sequence_mask, masked_softmax)."""

import pytest
import torch

import masked_softmax as ref
from book import (
    SEQ_LENS, SEQ_MASKED, SEQ_ONES, SEQ_ONES_MASKED, SEQ_X, SOFTMAX_LENS_1D, SOFTMAX_LENS_2D, SOFTMAX_X,
    random_inputs, random_lens,
)
from grader.comparisons import close
from grader.plugin import calls

# Not the book's sizes: 5 rows of 7, lengths from 0 (all masked) to 7 (nothing masked).
ROWS = random_inputs(31, 5, 7)
ROW_LENS = torch.tensor([3, 0, 7, 1, 5])
# Scores for 3 batch items, 5 queries, 7 keys, with both forms of valid_lens.
SCORES = 3 * random_inputs(32, 3, 5, 7)
LENS_1D = torch.tensor([1, 7, 4])
LENS_2D = random_lens(33, 7, 3, 5)
NONE_SCORES = random_inputs(34, 3, 4, 5)


def sequence_mask(X, valid_len, value=0.0, keep=lambda positions, lens: positions < lens):
    """The reference ``sequence_mask`` on a copy, optionally with a different comparison (a mistake)."""
    X = X.clone()
    mask = keep(torch.arange(X.shape[1])[None, :], valid_len[:, None])
    X[~mask] = value
    return X


def masked_softmax(X, lens, *, value=-1e6, spread="interleave", after=False, keep=lambda p, n: p < n):
    """The reference masked softmax on a copy of ``X``, or one of the usual mistakes."""
    shape = X.shape
    if lens.dim() == 1:
        lens = torch.repeat_interleave(lens, shape[1]) if spread == "interleave" else lens.repeat(shape[1])
    else:
        lens = lens.reshape(-1) if spread == "interleave" else lens.T.reshape(-1)
    if after:  # softmax first, then zero the padding: the rows no longer sum to 1
        weights = torch.softmax(X, dim=-1).reshape(-1, shape[-1])
        return sequence_mask(weights, lens, 0.0, keep).reshape(shape)
    return torch.softmax(sequence_mask(X.reshape(-1, shape[-1]), lens, value, keep).reshape(shape), dim=-1)


def check_masked_softmax(probed, X, lens, what):
    """Compare with the reference (the module's diagnosis names a confirmed mistake)."""
    close(probed, ref.masked_softmax(X.clone(), lens), what=what, grid=True)


@pytest.mark.points(1)
@calls("sequence_mask", SEQ_X, SEQ_LENS)
def test_sequence_mask_book(probed):
    close(probed, SEQ_MASKED, what="sequence_mask(tensor([[1, 2, 3], [4, 5, 6]]), tensor([1, 2]))")


@pytest.mark.points(1)
@calls("sequence_mask", SEQ_ONES, SEQ_LENS, -1)
def test_sequence_mask_book_value(probed):
    close(probed, SEQ_ONES_MASKED, what="sequence_mask(torch.ones(2, 3, 4), tensor([1, 2]), value=-1)")


@pytest.mark.points(1)
@calls("sequence_mask", ROWS, ROW_LENS, -7.5)
def test_sequence_mask_other_sizes(probed):
    close(probed, ref.sequence_mask(ROWS.clone(), ROW_LENS, -7.5),
          what="sequence_mask on 5 rows of 7 with lengths [3, 0, 7, 1, 5], value=-7.5")


@pytest.mark.points(1)
@calls("masked_softmax", SOFTMAX_X, SOFTMAX_LENS_1D)
def test_masked_softmax_book_1d(probed):
    check_masked_softmax(probed, SOFTMAX_X, SOFTMAX_LENS_1D,
                         "masked_softmax(torch.rand(2, 2, 4), torch.tensor([2, 3]))")


@pytest.mark.points(1)
@calls("masked_softmax", SOFTMAX_X, SOFTMAX_LENS_2D)
def test_masked_softmax_book_2d(probed):
    check_masked_softmax(probed, SOFTMAX_X, SOFTMAX_LENS_2D,
                         "masked_softmax(torch.rand(2, 2, 4), torch.tensor([[1, 3], [2, 4]]))")


@pytest.mark.points(1)
@calls("masked_softmax", NONE_SCORES, None)
def test_masked_softmax_none(probed):
    close(probed, torch.softmax(NONE_SCORES, dim=-1), what="masked_softmax(X, None) for X of shape (3, 4, 5)",
          grid=True)


@pytest.mark.points(2)
@calls("masked_softmax", SCORES, LENS_1D)
def test_masked_softmax_1d_valid_lens(probed):
    check_masked_softmax(probed, SCORES, LENS_1D,
                         "masked_softmax on scores (3, 5, 7) with valid_lens [1, 7, 4]: 0 beyond each length, rows sum to 1")


@pytest.mark.points(2)
@calls("masked_softmax", SCORES, LENS_2D)
def test_masked_softmax_2d_valid_lens(probed):
    check_masked_softmax(probed, SCORES, LENS_2D,
                         "masked_softmax on scores (3, 5, 7) with one valid length per query, valid_lens (3, 5)")
