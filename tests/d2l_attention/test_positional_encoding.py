"""Section 11.6.3: sinusoidal positional encoding."""

import pytest
import torch

import positional_encoding as ref
from book import ENCODING_DIM, NUM_STEPS, encoding_formula, random_inputs
from grader.suite.comparisons import close, require
from grader.suite.exact import dropout_factor, positions_are_rotations
from hints import same_seed

# Float32 tables drift from the float64 formula by up to ~1e-4 at positions near 1000
# (the angle i * omega is rounded); correct alternatives (exp/log) drift as much again.
FAR_ATOL = 5e-4
POSITIONS = [0, 1, 2, 7, 50, 123, 500, 999]
X_ADD = random_inputs(51, 2, 9, 12)
IN_PLACE_HINT = "Add into a new tensor, X = X + self.P[...], not in place (X += ..., X.add_(...)), which changes the caller's X."


def check_table_shape(P, shape):
    """``P`` is ``(1, max_len, num_hiddens)`` before any value is compared."""
    require(isinstance(P, torch.Tensor) and tuple(P.shape) == shape, f"self.P should have shape {shape}",
            what="the shape of the position table self.P", expected=str(shape),
            actual=str(tuple(P.shape)) if isinstance(P, torch.Tensor) else type(P).__name__,
            hint="P is (1, max_len, num_hiddens): one row per position, the same for every batch item (max_len defaults to 1000).")


@pytest.mark.points(1)
@pytest.mark.probe("table", args=[ENCODING_DIM, 0])
def test_table_book(probed):
    check_table_shape(probed, (1, 1000, ENCODING_DIM))
    close(probed[0, :NUM_STEPS, 6:10], encoding_formula(range(NUM_STEPS), ENCODING_DIM)[:, 6:10].float(),
          what="PositionalEncoding(32, 0).P[0, :60, 6:10] (the columns the book plots)")


@pytest.mark.points(1)
@pytest.mark.probe("table", args=[64, 0, 1000])
def test_table_formula_far_positions(probed):
    check_table_shape(probed, (1, 1000, 64))
    close(probed[0, POSITIONS], encoding_formula(POSITIONS, 64).float(), atol=FAR_ATOL,
          what=f"rows {POSITIONS} of PositionalEncoding(64, 0).P (all 64 columns)")


@pytest.mark.points(1)
@pytest.mark.probe("table", args=[10, 0, 50])
def test_table_other_size(probed):
    check_table_shape(probed, (1, 50, 10))
    close(probed[0], encoding_formula(range(50), 10).float(), what="PositionalEncoding(10, 0, max_len=50).P[0]")


@pytest.mark.points(2)
@pytest.mark.probe("table", args=[16, 0, 64])
def test_relative_positions_are_rotations(probed):
    check_table_shape(probed, (1, 64, 16))
    # Row 0 (sin 0 = 0, cos 0 = 1) and the rotations below fix every row: a table of zeros, or any
    # other table the rotations leave alone, fails here.
    close(probed[0, 0], encoding_formula([0], 16)[0].float(), what="PositionalEncoding(16, 0, 64).P[0, 0]: position 0 "
          "(sin 0 = 0 in even columns, cos 0 = 1 in odd ones)")
    positions_are_rotations(probed[0], 16)


@pytest.mark.points(1)
@pytest.mark.probe("encode", args=[24, 0.3, 40], X=torch.zeros(3, 17, 24))
def test_forward_zeros_gives_table(probed):
    expected = same_seed(0, ref.PositionalEncoding, 24, 0.3, 40)(torch.zeros(3, 17, 24))
    close(probed["output"], expected, what="PositionalEncoding(24, 0.3, 40) in eval mode on zeros(3, 17, 24): P[:, :17] for every batch item")


@pytest.mark.points(1)
@pytest.mark.probe("encode", args=[12, 0.5], X=X_ADD)
def test_forward_adds_table(probed):
    what = "PositionalEncoding(12, 0.5) in eval mode on random X of shape (2, 9, 12)"
    expected = same_seed(0, ref.PositionalEncoding, 12, 0.5)(X_ADD)
    close(probed["output"], expected, what=f"{what}: X + P[:, :9]")
    require(probed["changed_X"] is False, "forward changed the X it was given (the caller's tensor)",
            what=f"{what}: X after the call", hint=IN_PLACE_HINT)


DROPOUT_P = 0.3  # not the book's rate: a rate written into the code instead of `dropout` fails
ADDED = same_seed(0, ref.PositionalEncoding, 12, DROPOUT_P)(X_ADD)  # X + P[:, :9], in eval mode


@pytest.mark.points(1)
@pytest.mark.probe("train_and_eval", args=[12, DROPOUT_P], X=X_ADD)
def test_dropout_in_training(probed):
    what = f"PositionalEncoding(12, {DROPOUT_P}) on random X of shape (2, 9, 12)"
    evaluated, trained = (probed.get("eval"), probed.get("train")) if isinstance(probed, dict) else (None, None)
    close(evaluated, ADDED, what=f"{what}, in eval mode: X + P[:, :9]")
    close(trained, ADDED, what=f"{what}, in training mode: its shape", atol=float("inf"))
    what += f", in training mode: dropout ({DROPOUT_P}) on X + P"
    total, out, scale = ADDED.double(), trained.double(), 1 / (1 - DROPOUT_P)
    require(not torch.allclose(out, total, atol=1e-6), "nothing was dropped in training mode", what=what,
            hint="Apply self.dropout = nn.Dropout(dropout) to X + P in forward.")
    kept, dropped = (out - scale * total).abs() < 1e-4, out.abs() < 1e-6
    factor = dropout_factor(total, out, DROPOUT_P)
    require(factor is None, f"your dropout scales the entries it keeps by {round(factor or 0, 4)}, that is a rate of "
            f"{round(1 - 1 / (factor or 1), 4)}, but dropout={DROPOUT_P} was passed", what=what,
            hint="Use the dropout rate the constructor is given: self.dropout = nn.Dropout(dropout).")
    # No single rate explains what was kept: dropout acted on another tensor than X + P.
    require(bool((kept | dropped).all()), f"some entries are neither 0 nor {scale:.4f} x (X + P) (1 / (1 - {DROPOUT_P}))",
            what=what, hint="Add the table first, then apply self.dropout to the sum X + P (not to X alone, nor to P).")
    require(bool(dropped.any()) and bool(kept.any()), "dropout should zero some entries and keep others", what=what,
            hint="Apply self.dropout = nn.Dropout(dropout) to X + P in forward.")
