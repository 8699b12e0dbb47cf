"""Exercise 3.1: give a SelfAttention_v1 the weights of a SelfAttention_v2.

The probe builds the *reference* modules (the rubric's ``uses``); only the copy function is
the student's. A correct copy makes v1's output equal v2's: exactly with the textbook's
``W.data = linear.weight.T``, within float32 rounding (about 1e-8) with e.g. ``copy_``
into a contiguous parameter, hence the tolerance of 1e-6.
"""

import pytest
import torch

import self_attention_v2 as ref_v2
from grader.comparisons import close, require
from textbook import EXERCISE_3_1_FIRST, EXERCISE_3_1_LAST, INPUTS, random_inputs

ORDER = ("W_query", "W_key", "W_value")
ATOL = 1e-6  # float32 rounding of an equivalent copy, far below any real mistake
X_OTHER = random_inputs(41, 7, 5)  # 7 tokens of size 5: not the book's sizes
X_SQUARE = random_inputs(42, 6, 4)
X_SHORT, X_MID, X_LONG = random_inputs(43, 1, 3), random_inputs(44, 4, 3), random_inputs(45, 8, 3)
X_GRAD = random_inputs(46, 5, 3)

NOT_TRANSPOSED_HINT = ("The weights are not transposed: nn.Linear stores its weight as (d_out, d_in) and computes "
                       "x @ weight.T, while v1 computes x @ W with W of shape (d_in, d_out). Copy weight.T.")


def reference_v2(seed, d_in, d_out):
    """The reference sa_v2, built as the probe builds it: right after the seed."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return ref_v2.SelfAttention_v2(d_in, d_out)


def expected(seed, d_in, d_out, x):
    """sa_v2(x): what sa_v1 must return after a correct copy."""
    with torch.no_grad():
        return reference_v2(seed, d_in, d_out)(x)


def v1_outputs(probed, d_in, d_out, what):
    """The outputs of sa_v1 after the copy, or a failure saying why sa_v1 could not run."""
    if "v1_error" in probed:
        shapes = {name: probed["v1_params"][name].get("shape") for name in ORDER}
        transposed = any(shape == [d_out, d_in] for shape in shapes.values()) and d_in != d_out
        require(False, f"sa_v1(x) raised {probed['v1_error']} after copy_v2_weights_into_v1", what=what,
                hint=NOT_TRANSPOSED_HINT if transposed else f"After the copy each v1 matrix must have shape (d_in, d_out) = ({d_in}, {d_out}).",
                expected=f"W_query, W_key, W_value of shape ({d_in}, {d_out})",
                actual=", ".join(f"{name} {tuple(shape) if shape else probed['v1_params'][name]['kind']}" for name, shape in shapes.items()))
    return probed["v1"]


def check_same_as_v2(probed, d_in, d_out, xs, v2_outs, what):
    """Every sa_v1 output equals the reference sa_v2's (``v2_outs``) on the same input, within ATOL."""
    for x, out, v2_out in zip(xs, v1_outputs(probed, d_in, d_out, what), v2_outs):
        close(out, v2_out, what=f"{what}: sa_v1(x) on {x.shape[0]} token(s), compared with sa_v2(x)", atol=ATOL)


# What the reference gives on the checks' inputs: computed once, when the suite is collected (a batch's
# grading processes share them), not in every submission's checks.
TEXTBOOK_V2 = expected(123, 3, 2, INPUTS)
V2_WEIGHTS_SEED_5 = {name: getattr(reference_v2(5, 4, 3), name).weight.detach() for name in ORDER}
SEED_42 = [expected(42, 3, 2, INPUTS)]
SIZES_5_4 = [expected(7, 5, 4, X_OTHER)]
SQUARE = [expected(3, 4, 4, X_SQUARE)]
SEVERAL = [expected(9, 3, 5, x) for x in (X_SHORT, X_MID, X_LONG)]
SEED_11 = [expected(11, 3, 2, INPUTS)]


@pytest.mark.points(2)
@pytest.mark.probe("transfer", seed=123, d_in=3, d_out=2, xs=[INPUTS])
def test_textbook_first_and_last_rows(probed):
    what = "sa_v1(inputs) after copying the weights of a seed-123 SelfAttention_v2(3, 2)"
    out = v1_outputs(probed, 3, 2, what)[0]
    require(isinstance(out, torch.Tensor) and tuple(out.shape) == (6, 2), "sa_v1(inputs) does not have shape (6, 2)", what=what)
    close(out[0], EXERCISE_3_1_FIRST, what=what + ", first row")
    close(out[-1], EXERCISE_3_1_LAST, what=what + ", last row")


@pytest.mark.points(1)
@pytest.mark.probe("transfer", seed=123, d_in=3, d_out=2, xs=[INPUTS])
def test_textbook_same_output_as_v2(probed):
    what = "sa_v1(inputs) - sa_v2(inputs) after the copy (seed 123)"
    out = v1_outputs(probed, 3, 2, what)[0]
    close(probed["v2"][0], TEXTBOOK_V2, what="sa_v2(inputs) after the copy (seed 123)", atol=ATOL)
    close(out, probed["v2"][0], what=what + f" must be 0 (up to {ATOL:g})", atol=ATOL)


@pytest.mark.points(1)
@pytest.mark.probe("transfer", seed=5, d_in=4, d_out=3, xs=[])
def test_v2_left_unchanged(probed):
    what = "the weights of sa_v2 (SelfAttention_v2(4, 3), seed 5) after copy_v2_weights_into_v1"
    require(sorted(probed["v2_named"]) == sorted(f"{n}.weight" for n in ORDER),
            f"sa_v2's parameters are now {probed['v2_named']}", what=what, hint="Leave sa_v2 as it is: only sa_v1 changes.")
    for name in ORDER:
        close(probed["v2_weights"][name], V2_WEIGHTS_SEED_5[name], what=f"sa_v2.{name}.weight after the copy",
              atol=0.0)


@pytest.mark.points(1)
@pytest.mark.probe("transfer", seed=42, d_in=3, d_out=2, xs=[INPUTS])
def test_other_seed(probed):
    check_same_as_v2(probed, 3, 2, [INPUTS], SEED_42, "SelfAttention_v1(3, 2) with the weights of a seed-42 SelfAttention_v2")


@pytest.mark.points(1)
@pytest.mark.probe("transfer", seed=7, d_in=5, d_out=4, xs=[X_OTHER])
def test_other_sizes(probed):
    check_same_as_v2(probed, 5, 4, [X_OTHER], SIZES_5_4, "SelfAttention_v1(5, 4) with the weights of a SelfAttention_v2(5, 4)")


@pytest.mark.points(1)
@pytest.mark.probe("transfer", seed=3, d_in=4, d_out=4, xs=[X_SQUARE])
def test_square_weights_transposed(probed):
    # With d_in == d_out an untransposed copy runs without error: only the values show the mistake.
    check_same_as_v2(probed, 4, 4, [X_SQUARE], SQUARE, "SelfAttention_v1(4, 4) with the weights of a SelfAttention_v2(4, 4)")


@pytest.mark.points(1)
@pytest.mark.probe("transfer", seed=9, d_in=3, d_out=5, xs=[X_SHORT, X_MID, X_LONG])
def test_several_inputs(probed):
    check_same_as_v2(probed, 3, 5, [X_SHORT, X_MID, X_LONG], SEVERAL,
                     "SelfAttention_v1(3, 5) with the weights of a SelfAttention_v2(3, 5)")


@pytest.mark.points(1)
@pytest.mark.probe("transfer", seed=11, d_in=3, d_out=2, xs=[INPUTS], v1_seed=99)
def test_v1_start_does_not_matter(probed):
    check_same_as_v2(probed, 3, 2, [INPUTS], SEED_11,
                     "a SelfAttention_v1(3, 2) built with seed 99, given the weights of a seed-11 v2")


@pytest.mark.points(1)
@pytest.mark.probe("transfer", seed=13, d_in=3, d_out=2, xs=[X_GRAD])
def test_parameters_stay_trainable(probed):
    what = "sa_v1's W_query, W_key, W_value after the copy, and their gradients from (sa_v1(x) ** 2).sum().backward()"
    v1_outputs(probed, 3, 2, what)
    for name in ORDER:
        info = probed["v1_params"][name]
        require(info["kind"] == "Parameter", f"sa_v1.{name} is a {info['kind']} after the copy, not an nn.Parameter", what=what,
                hint=f"Keep sa_v1.{name} an nn.Parameter: replace its values (sa_v1.{name}.data = ...), not the attribute.")
    require(sorted(probed["v1_named"]) == sorted(ORDER), f"sa_v1's parameters are now {probed['v1_named']}", what=what,
            hint="sa_v1 must keep exactly its three parameters W_query, W_key, W_value.")
    missing = [name for name in ORDER if not probed["v1_gradients"][name]]
    require(not missing, f"no gradient reached sa_v1's {', '.join(missing)}", what=what,
            hint="After the copy sa_v1 must still be trainable: its matrices are leaf nn.Parameters that require gradients.")
