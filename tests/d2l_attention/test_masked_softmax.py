"""Section 11.3: the masked softmax operation (sequence_mask, masked_softmax)."""

import pytest
import torch

import masked_softmax as ref
from book import (
    SEQ_LENS, SEQ_MASKED, SEQ_ONES, SEQ_ONES_MASKED, SEQ_X, SOFTMAX_LENS_1D, SOFTMAX_LENS_2D, SOFTMAX_X,
    random_inputs, random_lens,
)
from grader.suite.comparisons import close
from grader.suite.plugin import calls

# Not the book's sizes: 5 rows of 7, lengths from 0 (all masked) to 7 (nothing masked).
ROWS = random_inputs(31, 5, 7)
ROW_LENS = torch.tensor([3, 0, 7, 1, 5])
# Scores for 3 batch items, 5 queries, 7 keys, with both forms of valid_lens (the 1-D one with a length 0).
SCORES = 3 * random_inputs(32, 3, 5, 7)
LENS_1D = torch.tensor([1, 0, 4])  # 0: no valid key, the book's -1e6 leaves the row uniform (-inf: NaN)
LENS_2D = random_lens(33, 7, 3, 5)
NONE_SCORES = random_inputs(34, 3, 4, 5)


def masked_softmax_of(X, lens):
    """What the reference masked_softmax gives (on a copy of ``X``)."""
    return ref.masked_softmax(X.clone(), lens)


# One check per case: the student's function on these inputs against the reference's value, computed
# here once (the book's printed values for the *book* cases). Attention weights are drawn as grids.
CASES = [
    pytest.param(SEQ_MASKED, "sequence_mask(tensor([[1, 2, 3], [4, 5, 6]]), tensor([1, 2]))", False,
                 marks=calls("sequence_mask", SEQ_X, SEQ_LENS), id="sequence_mask_book"),
    pytest.param(SEQ_ONES_MASKED, "sequence_mask(torch.ones(2, 3, 4), tensor([1, 2]), value=-1)", False,
                 marks=calls("sequence_mask", SEQ_ONES, SEQ_LENS, -1), id="sequence_mask_book_value"),
    pytest.param(ref.sequence_mask(ROWS.clone(), ROW_LENS, -7.5),
                 "sequence_mask on 5 rows of 7 with lengths [3, 0, 7, 1, 5], value=-7.5", False,
                 marks=calls("sequence_mask", ROWS, ROW_LENS, -7.5), id="sequence_mask_other_sizes"),
    pytest.param(masked_softmax_of(SOFTMAX_X, SOFTMAX_LENS_1D), "masked_softmax(torch.rand(2, 2, 4), torch.tensor([2, 3]))",
                 True, marks=calls("masked_softmax", SOFTMAX_X, SOFTMAX_LENS_1D), id="masked_softmax_book_1d"),
    pytest.param(masked_softmax_of(SOFTMAX_X, SOFTMAX_LENS_2D),
                 "masked_softmax(torch.rand(2, 2, 4), torch.tensor([[1, 3], [2, 4]]))", True,
                 marks=calls("masked_softmax", SOFTMAX_X, SOFTMAX_LENS_2D), id="masked_softmax_book_2d"),
    pytest.param(torch.softmax(NONE_SCORES, dim=-1), "masked_softmax(X, None) for X of shape (3, 4, 5)", True,
                 marks=calls("masked_softmax", NONE_SCORES, None), id="masked_softmax_none"),
]
# The same, worth two points each: the masks of the two forms of valid_lens on other sizes.
VALID_LENS_CASES = [
    pytest.param(masked_softmax_of(SCORES, LENS_1D),
                 "masked_softmax on scores (3, 5, 7) with valid_lens [1, 0, 4]: 0 beyond each length, rows sum "
                 "to 1; item 1 has no valid key: masked with the book's -1e6, its rows are uniform (1/7 each)",
                 marks=calls("masked_softmax", SCORES, LENS_1D), id="1d"),
    pytest.param(masked_softmax_of(SCORES, LENS_2D),
                 "masked_softmax on scores (3, 5, 7) with one valid length per query, valid_lens (3, 5)",
                 marks=calls("masked_softmax", SCORES, LENS_2D), id="2d"),
]


@pytest.mark.points(1)
@pytest.mark.parametrize("expected, what, grid", CASES)
def test_matches_reference(probed, expected, what, grid):
    close(probed, expected, what=what, grid=grid)


@pytest.mark.points(2)
@pytest.mark.parametrize("expected, what", VALID_LENS_CASES)
def test_masked_softmax_valid_lens(probed, expected, what):
    close(probed, expected, what=what, grid=True)
