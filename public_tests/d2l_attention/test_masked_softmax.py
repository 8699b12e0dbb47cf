"""Public tests for the masked softmax: the book's examples."""

import pytest
import torch

from book_values import SCORES, VALID_LENS, generated
from grader.suite.public_reference import same
from grader.suite.comparisons import close, require
from grader.suite.plugin import calls


@pytest.mark.points(1)
@calls("sequence_mask", torch.tensor([[1, 2, 3], [4, 5, 6]]), torch.tensor([1, 2]))
def test_sequence_mask_book_example(probed):
    close(probed, torch.tensor([[1, 0, 0], [4, 5, 0]]), what="sequence_mask(X, torch.tensor([1, 2]))")


@pytest.mark.points(1)
@calls("sequence_mask", torch.ones(2, 3, 4), torch.tensor([1, 2]), -1)
def test_sequence_mask_trailing_axes(probed):
    # The docstring's example: X has an axis after the first two, so whole entries X[r, p] are masked.
    expected = torch.ones(2, 3, 4)
    expected[0, 1:] = -1  # row 0 keeps position 0
    expected[1, 2:] = -1  # row 1 keeps positions 0 and 1
    what = "sequence_mask(torch.ones(2, 3, 4), torch.tensor([1, 2]), value=-1)"
    require(getattr(probed, "shape", None) == (2, 3, 4), "sequence_mask should keep the shape (2, 3, 4)",
            what=what, expected="shape (2, 3, 4)", actual=str(getattr(probed, "shape", type(probed))),
            hint="The mask has shape (n, maxlen): it selects whole entries X[r, p], whatever X has after its first two axes.")
    close(probed, expected, what=what + ": every number of X[r, p] at or beyond row r's valid length is -1")

@pytest.mark.points(1)
@calls("masked_softmax", SCORES, VALID_LENS)
def test_masked_softmax_book_example(probed):
    what = "masked_softmax(X of shape (2, 2, 4), torch.tensor([2, 3]))"
    require(getattr(probed, "shape", None) == (2, 2, 4), "masked_softmax should keep the shape (2, 2, 4)",
            what=what, expected="shape (2, 2, 4)", actual=str(getattr(probed, "shape", type(probed))))
    close(probed[0, :, 2:], torch.zeros(2, 2), what="item 0, positions 2 and 3 (beyond valid length 2)")
    close(probed[1, :, 3:], torch.zeros(2, 1), what="item 1, position 3 (beyond valid length 3)")
    close(probed.sum(dim=-1), torch.ones(2, 2), what="the sum of every row of weights")


# Inputs no book printed; the expected results are the reference's (catalog.json).
X_OTHER = 2 * generated(11, 2, 3, 5) - 1
LENS_2D = torch.tensor([[1, 3, 5], [2, 4, 1]])
OTHER_CASES = [
    pytest.param("sequence_mask(X, torch.tensor([1, 2]), -1.0) (writes the value given)",
                 marks=calls("sequence_mask", torch.tensor([[1.0, 2, 3], [4, 5, 6]]), torch.tensor([1, 2]), -1.0),
                 id="sequence_mask_value"),
    pytest.param("masked_softmax(X of shape (2, 3, 5), None) (no masking)", marks=calls("masked_softmax", X_OTHER, None),
                 id="no_valid_lens"),
    pytest.param("masked_softmax(X of shape (2, 3, 5), torch.tensor([4, 0])) (item 1 has no valid key: masked with "
                 "the book's -1e6, its rows are uniform, 1/5 each)",
                 marks=calls("masked_softmax", X_OTHER, torch.tensor([4, 0])), id="valid_lens_1d"),
    pytest.param("masked_softmax(X of shape (2, 3, 5), valid_lens [[1, 3, 5], [2, 4, 1]]) (one length per query)",
                 marks=calls("masked_softmax", X_OTHER, LENS_2D), id="valid_lens_2d"),
]


@pytest.mark.points(1)
@pytest.mark.parametrize("what", OTHER_CASES)
def test_other_inputs(probed, reference, what):
    same(probed, reference, what=what, grid=True)
