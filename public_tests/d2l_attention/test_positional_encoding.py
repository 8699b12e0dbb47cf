"""Public tests for the positional encoding: the table's shape and first entries, the rotation that
maps each position to a later one (as the hidden grade checks it), then the whole table and the
forward pass (the reference's results, from catalog.json)."""

import math

import pytest
import torch

from book_values import generated
from grader.suite.public_reference import same
from grader.suite.comparisons import close, require
from grader.suite.exact import positions_are_rotations


def check_table_shape(P, num_hiddens: int, max_len: int) -> None:
    """``P`` is ``(1, max_len, num_hiddens)`` before any value is compared."""
    shape = (1, max_len, num_hiddens)
    require(getattr(P, "shape", None) == shape, f"P should have shape (1, max_len, num_hiddens) = {shape}",
            what=f"PositionalEncoding({num_hiddens}, 0, max_len={max_len}).P", expected=f"shape {shape}",
            actual=str(getattr(P, "shape", type(P))))


@pytest.mark.points(1)
@pytest.mark.probe("table", num_hiddens=32, max_len=60)
def test_table_shape_and_first_entries(probed):
    check_table_shape(probed, 32, 60)
    close(probed[0, 0, :4], torch.tensor([0.0, 1.0, 0.0, 1.0]), what="P[0, 0, :4] (position 0: sin 0, cos 0, ...)")
    close(probed[0, 1, :2], torch.tensor([math.sin(1.0), math.cos(1.0)]), what="P[0, 1, :2] (position 1, j = 0)")


@pytest.mark.points(1)
@pytest.mark.probe("table", num_hiddens=16, max_len=64)
def test_relative_positions_are_rotations(probed):
    check_table_shape(probed, 16, 64)
    close(probed[0, 0], torch.tensor([0.0, 1.0] * 8), what="P[0, 0] (position 0: sin 0 = 0, cos 0 = 1)")
    positions_are_rotations(probed[0], 16)


# Beyond position 0 and 1: the whole table and the forward pass (the reference's, from catalog.json).
X_EMBEDDED = generated(31, 3, 5, 8)  # 3 sequences of 5 steps, 8 features: the batch is not the number of steps
IN_PLACE_HINT = "Add into a new tensor, X = X + self.P[...], not in place (X += ..., X.add_(...)), which changes the caller's X."


@pytest.mark.points(1)
@pytest.mark.probe("table", num_hiddens=32, max_len=60)
def test_whole_table(probed, reference):
    same(probed, reference, what="PositionalEncoding(32, 0, max_len=60).P, every position and every column")


@pytest.mark.points(1)
@pytest.mark.probe("encode", num_hiddens=8, max_len=20, X=X_EMBEDDED)
def test_forward_eval_mode(probed, reference):
    what = "PositionalEncoding(8, 0.5, max_len=20) in eval mode on X of shape (3, 5, 8)"
    same(probed["output"], reference["output"], what=what)
    require(probed["changed_X"] is False, "forward changed the X it was given (the caller's tensor)",
            what=f"{what}: X after the call", hint=IN_PLACE_HINT)


@pytest.mark.points(1)
@pytest.mark.probe("encode", num_hiddens=8, max_len=20, X=X_EMBEDDED, train=True)
def test_forward_training_mode(probed, reference):
    same(probed["output"], reference["output"], what="PositionalEncoding(8, 0.5, max_len=20) in training mode on X of "
                                                     "shape (3, 5, 8), forward right after torch.manual_seed(1) "
                                                     "(dropout acts on X + P)")
