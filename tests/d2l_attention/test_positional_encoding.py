"""Section 11.6.3: sinusoidal positional encoding."""

import pytest
import torch

import positional_encoding as ref
from book import ENCODING_DIM, NUM_STEPS, encoding_formula, random_inputs, rotation
from grader.checks import close, require
from hints import same_seed

# Float32 tables drift from the float64 formula by up to ~1e-4 at positions near 1000
# (the angle i * omega is rounded); correct alternatives (exp/log) drift as much again.
FAR_ATOL = 5e-4
POSITIONS = [0, 1, 2, 7, 50, 123, 500, 999]
X_ADD = random_inputs(51, 2, 9, 12)


def table(positions, d, mistake=""):
    """The formula's rows ``positions`` (float64), or what a known mistake gives instead."""
    i = torch.as_tensor(positions, dtype=torch.float64).reshape(-1, 1)
    if mistake == "same column exponent":  # column c uses 10000^(c/d), cosines too
        angles = i / torch.pow(10000.0, torch.arange(d, dtype=torch.float64) / d)
        out = torch.sin(angles)
        out[:, 1::2] = torch.cos(angles[:, 1::2])
        return out
    pairs = torch.arange(0, d, 2, dtype=torch.float64)
    exponent = {"j not 2j": pairs / 2 / d}.get(mistake, pairs / d)
    if mistake == "multiplied":  # huge angles: compute them as a float32 table would
        angles = (i.float() * torch.pow(10000.0, exponent.float())).double()
    else:
        angles = i / torch.pow(10000.0, exponent)
    first, second = (torch.cos, torch.sin) if mistake == "swapped" else (torch.sin, torch.cos)
    if mistake == "halves":
        return torch.cat([torch.sin(angles), torch.cos(angles)], dim=-1)
    out = torch.zeros(len(i), d, dtype=torch.float64)
    out[:, 0::2], out[:, 1::2] = first(angles), second(angles)
    return out


TABLE_MISTAKES = {
    "swapped": "Sine and cosine are swapped: even columns 2j hold sin(i / 10000^(2j/d)), odd columns 2j+1 the cosine.",
    "j not 2j": "The exponent is 2j/d, where 2j is the (even) column of the sine: use torch.arange(0, d, 2) / d, "
                "not torch.arange(d // 2) / d.",
    "same column exponent": "The cosine in column 2j+1 uses the same frequency as the sine in column 2j "
                            "(exponent 2j/d, not (2j+1)/d).",
    "multiplied": "Divide the position by 10000^(2j/d); do not multiply by it.",
    "halves": "Interleave the columns: sines in the even columns 0, 2, 4, ... and cosines in the odd ones, "
              "not all sines then all cosines.",
}


def table_variants(positions, d, columns=slice(None)):
    """Hints for the usual table mistakes, as the rows and columns being checked."""
    return {hint: (lambda m=mistake: table(positions, d, m)[:, columns].float()) for mistake, hint in TABLE_MISTAKES.items()}


def check_table_shape(P, shape):
    """``P`` is ``(1, max_len, num_hiddens)`` before any value is compared."""
    require(isinstance(P, torch.Tensor) and tuple(P.shape) == shape, f"self.P should have shape {shape}",
            what="the shape of the position table self.P", expected=str(shape),
            actual=str(tuple(P.shape)) if isinstance(P, torch.Tensor) else type(P).__name__,
            hint="P is (1, max_len, num_hiddens): one row per position, the same for every batch item (max_len defaults to 1000).")


@pytest.mark.probe("table", args=[ENCODING_DIM, 0])
def test_table_book(probed):
    check_table_shape(probed, (1, 1000, ENCODING_DIM))
    close(probed[0, :NUM_STEPS, 6:10], encoding_formula(range(NUM_STEPS), ENCODING_DIM)[:, 6:10].float(),
          what="PositionalEncoding(32, 0).P[0, :60, 6:10] (the columns the book plots)",
          variants=table_variants(range(NUM_STEPS), ENCODING_DIM, slice(6, 10)))


@pytest.mark.probe("table", args=[64, 0, 1000])
def test_table_formula_far_positions(probed):
    check_table_shape(probed, (1, 1000, 64))
    close(probed[0, POSITIONS], encoding_formula(POSITIONS, 64).float(), atol=FAR_ATOL,
          what=f"rows {POSITIONS} of PositionalEncoding(64, 0).P (all 64 columns)",
          variants=table_variants(POSITIONS, 64))


@pytest.mark.probe("table", args=[10, 0, 50])
def test_table_other_size(probed):
    check_table_shape(probed, (1, 50, 10))
    close(probed[0], encoding_formula(range(50), 10).float(), what="PositionalEncoding(10, 0, max_len=50).P[0]",
          variants=table_variants(range(50), 10),
          hint="Build the table from num_hiddens and max_len, for any even size.")


@pytest.mark.probe("table", args=[16, 0, 64])
def test_relative_positions_are_rotations(probed):
    check_table_shape(probed, (1, 64, 16))
    P = probed[0].double()
    for delta in (1, 5, 11):
        for j in range(8):
            now, later = P[:-delta, 2 * j: 2 * j + 2], P[delta:, 2 * j: 2 * j + 2]  # (64 - delta, 2)
            rotated = now @ rotation(delta, j, 16).T
            if torch.allclose(later, rotated, atol=1e-4):
                continue
            fit = torch.linalg.lstsq(now, later).solution.T  # the best fixed 2x2 map, if there is one
            if torch.allclose(now @ fit.T, later, atol=1e-4):
                why = ("P[i + delta] is a fixed map of P[i], but not the rotation by delta * omega_j: check the frequency "
                       "omega_j = 1 / 10000^(2j/d) and that column 2j holds the sine, column 2j+1 the cosine.")
            else:
                why = ("P[i + delta] is not the same linear map of P[i] for every i: columns 2j and 2j+1 must be the sine "
                       "and cosine of the same angle i * omega_j.")
            require(False, f"columns {2 * j}, {2 * j + 1} shifted by delta = {delta} are not a fixed rotation", hint=why,
                    what="for every frequency pair j and offset delta: (P[i+delta, 2j], P[i+delta, 2j+1]) = "
                         "R(delta * omega_j) (P[i, 2j], P[i, 2j+1]), the same rotation for every position i",
                    expected=f"R = {[[round(x, 4) for x in row] for row in rotation(delta, j, 16).tolist()]}",
                    actual=f"best fixed map {[[round(x, 4) for x in row] for row in fit.tolist()]}")


@pytest.mark.probe("encode", args=[24, 0.3, 40], X=torch.zeros(3, 17, 24))
def test_forward_zeros_gives_table(probed):
    expected = same_seed(0, ref.PositionalEncoding, 24, 0.3, 40)(torch.zeros(3, 17, 24))
    close(probed, expected, what="PositionalEncoding(24, 0.3, 40) in eval mode on zeros(3, 17, 24): P[:, :17] for every batch item",
          variants={"Add the table rows from position 0: P[:, :num_steps, :].":
                    lambda: encoding_formula(range(1, 18), 24).float().expand(3, 17, 24),
                    **{hint: (lambda m=mistake: table(range(17), 24, m).float().expand(3, 17, 24))
                       for mistake, hint in TABLE_MISTAKES.items()}},
          hint="forward adds self.P[:, :X.shape[1], :] (it broadcasts over the batch); in eval mode dropout does nothing.")


@pytest.mark.probe("encode", args=[12, 0.5], X=X_ADD)
def test_forward_adds_table(probed):
    expected = same_seed(0, ref.PositionalEncoding, 12, 0.5)(X_ADD)
    close(probed, expected, what="PositionalEncoding(12, 0.5) in eval mode on random X of shape (2, 9, 12): X + P[:, :9]",
          variants={"Return X + P, not only the table: the encoding is added to the embeddings.":
                    lambda: encoding_formula(range(9), 12).float().expand(2, 9, 12),
                    "Add the table rows from position 0: P[:, :num_steps, :].":
                    lambda: X_ADD + encoding_formula(range(1, 10), 12).float(),
                    **{hint: (lambda m=mistake: X_ADD + table(range(9), 12, m).float()) for mistake, hint in TABLE_MISTAKES.items()}},
          hint="In eval mode the result is exactly X + self.P[:, :X.shape[1], :] (dropout does nothing).")


@pytest.mark.probe("train_and_eval", args=[12, 0.5], X=X_ADD)
def test_dropout_in_training(probed):
    what = "PositionalEncoding(12, 0.5) in training mode: dropout on X + P (compared with your own eval-mode result)"
    shape = (2, 9, 12)
    for mode in ("eval", "train"):
        value = probed[mode]
        require(isinstance(value, torch.Tensor) and tuple(value.shape) == shape, f"forward in {mode} mode should return {shape}",
                what=what, expected=str(shape), actual=str(tuple(value.shape)) if isinstance(value, torch.Tensor) else "")
    total, out = probed["eval"].double(), probed["train"].double()
    require(not torch.allclose(out, total, atol=1e-6), "nothing was dropped in training mode", what=what,
            hint="Apply self.dropout = nn.Dropout(dropout) to X + P in forward.")
    kept, dropped = (out - 2 * total).abs() < 1e-4, out.abs() < 1e-6
    require(bool((kept | dropped).all()), "some entries are neither 0 nor 2 x (X + P)", what=what,
            hint="Add the table first, then apply self.dropout to the sum (dropout(0.5) keeps an entry times 2 or zeroes it).")
    require(bool(dropped.any()) and bool(kept.any()), "dropout should zero some entries and keep others", what=what,
            hint="Apply self.dropout = nn.Dropout(dropout) to X + P in forward.")
