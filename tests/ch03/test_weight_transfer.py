"""Exercise 3.1: give a SelfAttention_v1 the weights of a SelfAttention_v2.

The probe builds the *reference* modules (the rubric's ``uses``); only the copy function is
the student's. Every check first reads the v1 object's own matrices after the copy and compares
them, here, with the reference v2's weights transposed (built from the same seed in this
process): exactly equal with the textbook's ``W.data = linear.weight.T``, within float32
rounding (about 1e-8) with e.g. ``copy_`` into a contiguous parameter, hence the tolerance of
1e-6. Outputs are v1's class ``forward`` (not an attribute set on the object), compared with the
reference v2's output computed here; gradients with the reference's, computed here too.
"""

import pytest
import torch

import self_attention_v1 as ref_v1
import self_attention_v2 as ref_v2
from grader.suite.comparisons import close, require
from grader.suite.exact import NOT_TRANSPOSED_HINT, what_it_holds
from textbook import EXERCISE_3_1_FIRST, EXERCISE_3_1_LAST, INPUTS, random_inputs

ORDER = ("W_query", "W_key", "W_value")
ATOL = 1e-6  # float32 rounding of an equivalent copy, far below any real mistake
X_OTHER = random_inputs(41, 7, 5)  # 7 tokens of size 5: not the book's sizes
X_SQUARE = random_inputs(42, 6, 4)
X_SHORT, X_MID, X_LONG = random_inputs(43, 1, 3), random_inputs(44, 4, 3), random_inputs(45, 8, 3)
X_GRAD = random_inputs(46, 5, 3)


def reference_v2(seed, d_in, d_out):
    """The reference sa_v2, built as the probe builds it: right after the seed."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return ref_v2.SelfAttention_v2(d_in, d_out)


def expected(seed, d_in, d_out, x):
    """sa_v2(x): what sa_v1 must return after a correct copy."""
    with torch.no_grad():
        return reference_v2(seed, d_in, d_out)(x)


class Transfer:
    """What a correct copy gives for a probe marker's seed, sizes and inputs, computed here: v1's
    matrices (v2's weights transposed), its outputs (v2's), and its matrices' gradients from
    ``sum((sa_v1(x) ** 2).sum() for x in xs).backward()``; and v1's matrices before the copy, as
    the probe builds v1 (right after v2, or after ``v1_seed``)."""

    def __init__(self, seed, d_in, d_out, xs, v1_seed=None):
        with torch.random.fork_rng(devices=[]):  # as the probe builds them: v2 right after the seed, then v1
            torch.manual_seed(seed)
            sa_v2 = ref_v2.SelfAttention_v2(d_in, d_out)
            if v1_seed is not None:
                torch.manual_seed(v1_seed)
            sa_v1 = ref_v1.SelfAttention_v1(d_in, d_out)
        self.before = {name: getattr(sa_v1, name).detach().clone() for name in ORDER}
        self.d_in, self.d_out, self.count = d_in, d_out, len(xs)
        self.v2_weights = {name: getattr(sa_v2, name).weight.detach().clone() for name in ORDER}
        self.matrices = {name: w.T.contiguous() for name, w in self.v2_weights.items()}
        with torch.no_grad():
            self.outs = [sa_v2(x) for x in xs]
        for name in ORDER:
            getattr(sa_v1, name).data = self.matrices[name].clone()
        if xs:
            sum((sa_v1(x).float() ** 2).sum() for x in xs).backward()
        self.gradients = {name: getattr(sa_v1, name).grad for name in ORDER}


def copied(probed, transfer: Transfer, what: str) -> list:
    """Check that sa_v1's own matrices are now sa_v2's weights transposed, that v1's forward runs on
    them and gives sa_v2's output on every input (one output per input); return those outputs."""
    d_in, d_out = transfer.d_in, transfer.d_out
    require(isinstance(probed, dict) and isinstance(probed.get("v1_matrices"), dict)
            and isinstance(probed.get("v1_params"), dict), "no matrices of sa_v1 came back", what=what)
    # sa_v2 changed by the copy first: what sa_v1 then holds follows from it (the same words as the public check).
    after = probed.get("v2_weights") if isinstance(probed.get("v2_weights"), dict) else {}
    for name in ORDER:
        mine = after.get(name)
        require(not (isinstance(mine, torch.Tensor) and mine.shape == transfer.v2_weights[name].shape
                     and not torch.equal(mine.to(transfer.v2_weights[name].dtype), transfer.v2_weights[name])),
                f"the copy changed sa_v2.{name}.weight", what=what,
                hint=f"Leave sa_v2 as it is: the copy goes from sa_v2 into sa_v1 (sa_v1.{name}.data = "
                     f"sa_v2.{name}.weight.T), never into sa_v2.")
    for name in ORDER:
        mine = probed["v1_matrices"].get(name)
        shape = list(mine.shape) if isinstance(mine, torch.Tensor) else None
        require(not (shape == [d_out, d_in] and d_in != d_out), f"sa_v1.{name} has shape ({d_out}, {d_in}) after the copy",
                what=what, hint=NOT_TRANSPOSED_HINT, expected=f"({d_in}, {d_out})", actual=f"({d_out}, {d_in})")
        held, hint = what_it_holds(mine, transfer.matrices[name], transfer.v2_weights, name, transfer.before[name])
        require(not held, held, what=what, hint=hint)
        close(mine, transfer.matrices[name], what=f"{what}: sa_v1.{name} after the copy, compared with "
              f"sa_v2.{name}.weight.T (the difference must be 0, up to {ATOL:g})", atol=ATOL)
    if "v1_error" in probed:
        require(False, f"sa_v1(x) raised {str(probed['v1_error'])[:300]} after copy_v2_weights_into_v1", what=what)
    outs = probed.get("v1")
    count = len(outs) if isinstance(outs, list) else None
    require(count == transfer.count, f"{transfer.count} output(s) of sa_v1 expected, "
            f"{count if count is not None else 'no list'} came back", what=what)
    for out, v2_out in zip(outs, transfer.outs, strict=True):
        close(out, v2_out, what=f"{what}: SelfAttention_v1.forward on {v2_out.shape[0]} token(s), compared with sa_v2(x)",
              atol=ATOL)
    return outs


def check_same_as_v2(probed, transfer: Transfer, what):
    """sa_v1's matrices are sa_v2's weights transposed and every sa_v1 output equals sa_v2's."""
    copied(probed, transfer, what)


# What the reference gives on the checks' inputs: computed once, when the suite is collected (a batch's
# grading processes share them), not in every submission's checks.
TEXTBOOK = Transfer(123, 3, 2, [INPUTS])
TEXTBOOK_V2 = TEXTBOOK.outs[0]
SEED_5 = Transfer(5, 4, 3, [])
SEED_42 = Transfer(42, 3, 2, [INPUTS])
SIZES_5_4 = Transfer(7, 5, 4, [X_OTHER])
SQUARE = Transfer(3, 4, 4, [X_SQUARE])
SEVERAL = Transfer(9, 3, 5, [X_SHORT, X_MID, X_LONG])
SEED_11 = Transfer(11, 3, 2, [INPUTS], v1_seed=99)
GRADIENTS = Transfer(13, 3, 2, [X_GRAD])


@pytest.mark.points(2)
@pytest.mark.probe("transfer", seed=123, d_in=3, d_out=2, xs=[INPUTS])
def test_textbook_first_and_last_rows(probed):
    what = "sa_v1(inputs) after copying the weights of a seed-123 SelfAttention_v2(3, 2)"
    out = copied(probed, TEXTBOOK, what)[0]
    close(out[0], EXERCISE_3_1_FIRST, what=what + ", first row")
    close(out[-1], EXERCISE_3_1_LAST, what=what + ", last row")


@pytest.mark.points(1)
@pytest.mark.probe("transfer", seed=123, d_in=3, d_out=2, xs=[INPUTS])
def test_textbook_same_output_as_v2(probed):
    what = "sa_v1(inputs) - sa_v2(inputs) after the copy (seed 123)"
    copied(probed, TEXTBOOK, what + f" must be 0 (up to {ATOL:g})")
    v2_outs = probed.get("v2")
    require(isinstance(v2_outs, list) and len(v2_outs) == 1, "no output of sa_v2 came back", what=what)
    close(v2_outs[0], TEXTBOOK_V2, what="sa_v2(inputs) after the copy (seed 123)", atol=ATOL)


@pytest.mark.points(1)
@pytest.mark.probe("transfer", seed=5, d_in=4, d_out=3, xs=[])
def test_v2_left_unchanged(probed):
    what = "the weights of sa_v2 (SelfAttention_v2(4, 3), seed 5) after copy_v2_weights_into_v1"
    copied(probed, SEED_5, what)
    require(sorted(probed.get("v2_named") or []) == sorted(f"{n}.weight" for n in ORDER),
            f"sa_v2's parameters are now {probed.get('v2_named')}", what=what, hint="Leave sa_v2 as it is: only sa_v1 changes.")
    weights = probed.get("v2_weights")
    require(isinstance(weights, dict), "no weights of sa_v2 came back", what=what)
    for name in ORDER:
        close(weights.get(name), SEED_5.v2_weights[name], what=f"sa_v2.{name}.weight after the copy", atol=0.0)


@pytest.mark.points(1)
@pytest.mark.probe("transfer", seed=42, d_in=3, d_out=2, xs=[INPUTS])
def test_other_seed(probed):
    check_same_as_v2(probed, SEED_42, "SelfAttention_v1(3, 2) with the weights of a seed-42 SelfAttention_v2")


@pytest.mark.points(1)
@pytest.mark.probe("transfer", seed=7, d_in=5, d_out=4, xs=[X_OTHER])
def test_other_sizes(probed):
    check_same_as_v2(probed, SIZES_5_4, "SelfAttention_v1(5, 4) with the weights of a SelfAttention_v2(5, 4)")


@pytest.mark.points(1)
@pytest.mark.probe("transfer", seed=3, d_in=4, d_out=4, xs=[X_SQUARE])
def test_square_weights_transposed(probed):
    # With d_in == d_out an untransposed copy runs without error: only the values show the mistake.
    check_same_as_v2(probed, SQUARE, "SelfAttention_v1(4, 4) with the weights of a SelfAttention_v2(4, 4)")


@pytest.mark.points(1)
@pytest.mark.probe("transfer", seed=9, d_in=3, d_out=5, xs=[X_SHORT, X_MID, X_LONG])
def test_several_inputs(probed):
    check_same_as_v2(probed, SEVERAL, "SelfAttention_v1(3, 5) with the weights of a SelfAttention_v2(3, 5)")


@pytest.mark.points(1)
@pytest.mark.probe("transfer", seed=11, d_in=3, d_out=2, xs=[INPUTS], v1_seed=99)
def test_v1_start_does_not_matter(probed):
    check_same_as_v2(probed, SEED_11, "a SelfAttention_v1(3, 2) built with seed 99, given the weights of a seed-11 v2")


@pytest.mark.points(1)
@pytest.mark.probe("transfer", seed=13, d_in=3, d_out=2, xs=[X_GRAD])
def test_parameters_stay_trainable(probed):
    what = "sa_v1's W_query, W_key, W_value after the copy, and their gradients from (sa_v1(x) ** 2).sum().backward()"
    copied(probed, GRADIENTS, what)
    for name in ORDER:
        info = probed["v1_params"].get(name) or {}
        require(info.get("kind") == "Parameter", f"sa_v1.{name} is a {info.get('kind')} after the copy, not an nn.Parameter",
                what=what, hint=f"Keep sa_v1.{name} an nn.Parameter: replace its values (sa_v1.{name}.data = ...), "
                "not the attribute.")
    require(sorted(probed.get("v1_named") or []) == sorted(ORDER), f"sa_v1's parameters are now {probed.get('v1_named')}",
            what=what, hint="sa_v1 must keep exactly its three parameters W_query, W_key, W_value.")
    gradients = probed.get("v1_gradients")
    require(isinstance(gradients, dict), "no gradients of sa_v1 came back", what=what)
    missing = [name for name in ORDER if not isinstance(gradients.get(name), torch.Tensor)]
    require(not missing, f"no gradient reached sa_v1's {', '.join(missing)}", what=what,
            hint="After the copy sa_v1 must still be trainable: its matrices are leaf nn.Parameters that require gradients.")
    for name in ORDER:
        close(gradients[name], GRADIENTS.gradients[name], what=f"the gradient of sa_v1.{name}", atol=1e-5)
