"""Section 3.6: multi-head attention, and Exercises 3.2 and 3.3.

mha.py is graded against the reference CausalAttention (``uses = ["causal"]`` in the rubric), so a
mistake in causal.py costs points only once. Textbook values first, then the same behaviour on
inputs no book printed. The probes are in probes/mha.py.
"""

import pytest
import torch
from torch import nn

import mha as ref
from behaviour import (
    check_dropout, check_every_gradient, check_mask_buffer, check_no_future, check_shorter_sequence, dropout_eval,
    reference_gradients, tensor_in, weights_from_scores,
)
from grader.sandbox.probing import linear_layers_fixed
from grader.suite.comparisons import close, require
from grader.suite.exact import check_head_arguments_not_swapped
from textbook import (
    BATCH, EXERCISE_3_2, EXERCISE_3_3_PARAMETERS, MHA_SEED_123, WRAPPER_SEED_123, random_inputs,
)

WRAPPER, MHA = "MultiHeadAttentionWrapper", "MultiHeadAttention"

X_WRAP = random_inputs(41, 3, 6, 5)  # 6 tokens, context_length 8
X_HEADS = random_inputs(42, 2, 7, 4)
X_OTHER = random_inputs(43, 3, 8, 5)
X_SHORT = random_inputs(44, 2, 5, 4)  # 5 tokens, context_length 10
X_FUTURE = random_inputs(45, 2, 7, 4)
X_FUTURE_CHANGED = torch.cat([X_FUTURE[:, :4], random_inputs(46, 2, 3, 4)], dim=1)  # tokens 5-7 differ
X_DROP = random_inputs(47, 2, 6, 4)
X_GRAD = random_inputs(48, 2, 5, 4)
X_3_2 = random_inputs(49, 3, 7, 5)

# -- hints ---------------------------------------------------------------------------------------
STALE_NOTEBOOK = ("Note: the book's published solution notebook prints a stale output (-9.1476e-02 …) from an "
                  "older, buggy softmax(dim=1) version of the code; the value checked here is the correct one.")


# -- reference computations ------------------------------------------------------------------------
def reference(seed, name, *args, **kwargs) -> nn.Module:
    """The reference module, built right after seeding, like the probe builds yours."""
    torch.manual_seed(seed)
    return getattr(ref, name)(*args, **kwargs)


# What Exercise 3.3's module holds, for the feedback, and its output with its nn.Linear layers given
# the fixed numbers, as the probe builds the student's: built once, when the suite is collected (a
# batch's grading processes share it).
X_3_3 = random_inputs(50, 1, 3, 768)
with torch.random.fork_rng(devices=[]), linear_layers_fixed():
    _GPT2 = reference(28, MHA, 768, 768, 1024, 0.0, num_heads=12)
    EXERCISE_3_3_SHAPES = {name: list(p.shape) for name, p in _GPT2.named_parameters()}
    EXERCISE_3_3_OUT = _GPT2.eval()(X_3_3).detach()
    del _GPT2


def expected_out(module, x):
    with torch.no_grad():
        return module.eval()(x)


def future_weights(seed, x, num_heads, head_dim):
    """The causal attention weights of the reference MultiHeadAttention(4, 6, 7, 0.0, num_heads) on ``x``."""
    m = reference(seed, MHA, 4, 6, 7, 0.0, num_heads)
    b, n, _ = x.shape
    with torch.no_grad():
        q = m.W_query(x).view(b, n, num_heads, head_dim).transpose(1, 2)
        k = m.W_key(x).view(b, n, num_heads, head_dim).transpose(1, 2)
    return weights_from_scores(q @ k.transpose(2, 3), head_dim)  # (b, heads, n, n)


# What the reference gives on the checks' inputs: computed once, when the suite is collected (a batch's
# grading processes share them), not in every submission's checks.
WRAPPER_OTHER = expected_out(reference(4, WRAPPER, 5, 2, 8, 0.0, num_heads=3), X_WRAP)
WRAPPER_HEADS_PARAMETERS = sum(p.numel() for p in reference(3, WRAPPER, 4, 3, 7, 0.25, num_heads=3, qkv_bias=True).parameters())
MHA_OTHER = expected_out(reference(21, MHA, 5, 6, 8, 0.0, num_heads=3, qkv_bias=True), X_OTHER)
MHA_SHORT = expected_out(reference(22, MHA, 4, 4, 10, 0.0, 2), X_SHORT)
MHA_FUTURE_WEIGHTS = future_weights(23, X_FUTURE, 3, 2)  # (2, 3, 7, 7)
MHA_EVAL = expected_out(reference(24, MHA, 4, 6, 6, 0.0, 2), X_DROP)
MHA_GRADIENTS = reference_gradients(reference(26, MHA, 4, 6, 5, 0.5, 2, qkv_bias=True), X_GRAD)
MHA_FUTURE_OUTS = tuple(expected_out(reference(23, MHA, 4, 6, 7, 0.0, 3), x) for x in (X_FUTURE, X_FUTURE_CHANGED))
DROPOUT_P = 0.3  # not the book's 0.5: a rate hard-coded to the book's must fail
MHA_DROPOUT_EVAL = dropout_eval(reference(25, MHA, 5, 20, 5, DROPOUT_P, 2), 5)
WRAPPER_HEADS_OUT = expected_out(reference(3, WRAPPER, 4, 3, 7, 0.25, num_heads=3, qkv_bias=True), X_HEADS)
X_STRUCTURE = random_inputs(51, 2, 4, 4)
MHA_STRUCTURE_OUT = expected_out(reference(0, MHA, 4, 6, 5, 0.0, 3), X_STRUCTURE)
EXERCISE_3_2_OTHER = expected_out(reference(27, WRAPPER, 5, 1, 8, 0.3, num_heads=2), X_3_2)


# -- 3.6.1: a wrapper around CausalAttention heads -----------------------------------------------
# The output of either module against the reference's (the book's printed rows for the *textbook* case).
OUTPUTS = [
    pytest.param(torch.stack((WRAPPER_SEED_123, WRAPPER_SEED_123)),
                 "MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)(batch), seed 123", id="wrapper_textbook",
                 marks=pytest.mark.probe("forward", seed=123, name=WRAPPER, args=[3, 2, 6, 0.0], kwargs={"num_heads": 2},
                                         x=BATCH)),
    pytest.param(WRAPPER_OTHER, "MultiHeadAttentionWrapper(5, 2, 8, 0.0, num_heads=3), seed 4, on a (3, 6, 5) batch",
                 id="wrapper_other_seeds_sizes",
                 marks=pytest.mark.probe("forward", seed=4, name=WRAPPER, args=[5, 2, 8, 0.0], kwargs={"num_heads": 3},
                                         x=X_WRAP)),
    pytest.param(MHA_OTHER, "MultiHeadAttention(5, 6, 8, 0.0, num_heads=3, qkv_bias=True), seed 21, on a (3, 8, 5) batch",
                 id="mha_other_seeds_sizes",
                 marks=pytest.mark.probe("forward", seed=21, name=MHA, args=[5, 6, 8, 0.0],
                                         kwargs={"num_heads": 3, "qkv_bias": True}, x=X_OTHER)),
]


@pytest.mark.points(1)
@pytest.mark.parametrize("expected, what", OUTPUTS)
def test_output(probed, expected, what):
    close(probed, expected, what=what)


@pytest.mark.points(1)
@pytest.mark.probe("wrapper_heads", seed=3, args=[4, 3, 7, 0.25], kwargs={"num_heads": 3, "qkv_bias": True}, x=X_HEADS)
def test_wrapper_heads_concatenated(probed):
    what = "MultiHeadAttentionWrapper(4, 3, 7, 0.25, num_heads=3, qkv_bias=True): its heads"
    require(probed["module_list"], f"self.heads is a {probed['heads_type']}, not an nn.ModuleList", what=what,
            hint="Keep the heads in an nn.ModuleList: a plain list does not register their parameters, so they "
                 "would not be trained, moved with .to(device) or switched by .eval().")
    types = probed["head_types"]
    require(types is not None and len(types) == 3, f"expected 3 heads, found {len(types or [])}", what=what,
            hint="Create num_heads heads.")
    require(all(t == "CausalAttention" for t in types), f"the heads are {sorted(set(types))}, not CausalAttention",
            what=what, hint="Each head is a CausalAttention from causal.py (from causal import CausalAttention).")
    check_head_arguments_not_swapped(probed.get("dropout"), probed.get("bias"), 0.25, True, what)
    require(probed.get("dropout") == [0.25] * 3, f"the heads' dropout rates are {probed.get('dropout')}, not 0.25",
            what=what, hint="Pass dropout to every CausalAttention head.")
    require(probed.get("bias") == [True] * 3, "the heads have no qkv bias", what=what,
            hint="Pass qkv_bias to every CausalAttention head.")
    distinct = probed.get("distinct_heads")
    require(distinct in (None, 3), f"the 3 heads are only {distinct} distinct module(s): heads listed twice share "
            "their parameters", what=what,
            hint="Create a new CausalAttention for every head ([CausalAttention(...) for _ in range(num_heads)]); "
                 "[CausalAttention(...)] * num_heads repeats one and the same head.")
    require(probed["parameters"] == WRAPPER_HEADS_PARAMETERS, f"the wrapper has {probed['parameters']} parameters, "
            f"expected {WRAPPER_HEADS_PARAMETERS}", what=what, hint="All heads' parameters belong to the wrapper (nn.ModuleList).")
    heads = probed.get("head_outputs")
    require(isinstance(heads, list) and len(heads) == 3 and all(isinstance(h, torch.Tensor) for h in heads),
            "no output of each head came back", what=what)
    concatenated = torch.cat(heads, dim=-1) if all(h.shape == heads[0].shape for h in heads) else heads[0]
    close(probed.get("out"), WRAPPER_HEADS_OUT, what="the output of MultiHeadAttentionWrapper(4, 3, 7, 0.25, "
          "num_heads=3, qkv_bias=True), seed 3, in eval mode")
    close(concatenated, WRAPPER_HEADS_OUT, what="the wrapper's output is its heads' outputs, concatenated on the last "
          "dimension in head order")


# -- 3.6.2: multi-head attention with weight splits ---------------------------------------------
@pytest.mark.points(2)
@pytest.mark.probe("forward", seed=123, name=MHA, args=[3, 2, 6, 0.0], kwargs={"num_heads": 2}, x=BATCH)
def test_mha_textbook(probed):
    close(probed, torch.stack((MHA_SEED_123, MHA_SEED_123)),
          what="MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)(batch), seed 123")


@pytest.mark.points(1)
@pytest.mark.probe("shorter", seed=22, name=MHA, args=[4, 4, 10, 0.0, 2], x=X_SHORT)
def test_mha_shorter_sequence(probed):
    check_shorter_sequence(probed, MHA_SHORT, what="MultiHeadAttention(4, 4, 10, 0.0, num_heads=2), seed 22, on 5 tokens "
                                                   "(fewer than context_length 10)")


@pytest.mark.points(1)
@pytest.mark.probe("future", seed=23, args=[4, 6, 7, 0.0, 3], x=X_FUTURE, changed=X_FUTURE_CHANGED)
def test_mha_no_future(probed):
    check_no_future(probed, MHA_FUTURE_WEIGHTS, MHA_FUTURE_OUTS, weights_of="MultiHeadAttention(4, 6, 7, 0.0, num_heads=3)")


@pytest.mark.points(1)
@pytest.mark.probe("forward", seed=24, name=MHA, args=[4, 6, 6, 0.5, 2], x=X_DROP, train=False)
def test_mha_eval_turns_dropout_off(probed):
    close(probed, MHA_EVAL,
          what="MultiHeadAttention(4, 6, 6, dropout=0.5, num_heads=2) in eval mode equals the same module with "
               "dropout 0")


@pytest.mark.points(1)
@pytest.mark.probe("dropout", seed=25, n=5, p=DROPOUT_P)
def test_mha_dropout_on_weights(probed):
    check_dropout(probed, n=5, p=DROPOUT_P, blocks=[(0, 1), (2, 3)], expected_eval=MHA_DROPOUT_EVAL,
                  what=f"MultiHeadAttention(5, 20, 5, dropout={DROPOUT_P}, num_heads=2) with values [I | I] per head and an "
                       "identity out_proj, in training mode (each head shows its attention weights after dropout twice)")


@pytest.mark.points(1)
@pytest.mark.probe("mha_structure", args=[4, 6, 5, 0.0, 3], indivisible=[4, 5, 5, 0.0, 2], x=X_STRUCTURE)
def test_mha_structure(probed):
    what = "MultiHeadAttention(4, 6, 5, 0.0, num_heads=3): mask buffer, out_proj, head sizes"
    require(probed["indivisible"] in ("AssertionError", "ValueError"),
            "MultiHeadAttention(4, 5, 5, 0.0, num_heads=2) should fail: 5 features cannot be split into 2 heads"
            + (f" (it raised {probed['indivisible']})" if probed["indivisible"] else ""),
            what="d_out must be divisible by num_heads",
            hint='Start __init__ with assert d_out % num_heads == 0, "d_out must be divisible by num_heads".')
    require(probed["out_proj"] == "Linear", f"out_proj is a {probed['out_proj']}, not an nn.Linear", what=what,
            hint="Create self.out_proj = nn.Linear(d_out, d_out) after W_value; it mixes the heads' outputs.")
    require(probed["out_proj_shape"] == [6, 6, True], "out_proj should be nn.Linear(d_out, d_out) with a bias",
            what=what, hint="self.out_proj = nn.Linear(d_out, d_out)", expected="in 6, out 6, bias",
            actual=str(probed["out_proj_shape"]))
    require(probed["num_heads"] == 3 and probed["head_dim"] == 2,
            f"num_heads = {probed['num_heads']}, head_dim = {probed['head_dim']}; expected 3 and 2", what=what,
            hint="Keep self.num_heads = num_heads and self.head_dim = d_out // num_heads.")
    check_mask_buffer(probed, what=what, tokens=X_STRUCTURE.shape[1])
    close(probed.get("out"), MHA_STRUCTURE_OUT, what="MultiHeadAttention(4, 6, 5, 0.0, num_heads=3), seed 0, on a "
          "(2, 4, 4) batch")


@pytest.mark.points(1)
@pytest.mark.probe("gradients", seed=26, name=MHA, args=[4, 6, 5, 0.5, 2], kwargs={"qkv_bias": True}, x=X_GRAD,
                   train_seed=27)
def test_mha_gradients(probed):
    check_every_gradient(
        probed, MHA_GRADIENTS,
        what="gradients of MultiHeadAttention(4, 6, 5, 0.5, num_heads=2, qkv_bias=True) in eval mode, after a backward "
             "pass in training mode, reach every parameter",
        layers="W_query, W_key, W_value are nn.Linear(d_in, d_out, bias=qkv_bias); out_proj is nn.Linear(d_out, d_out).")


# -- Exercises 3.2 and 3.3 -----------------------------------------------------------------------
EXERCISE_3_2_HINT = ("Exercise 3.2 keeps MultiHeadAttentionWrapper(d_in, ..., context_length, dropout, num_heads=2), two "
                     "CausalAttention heads side by side, and changes one of its arguments; MultiHeadAttention (one "
                     "projection split into heads, then out_proj) computes other numbers.")


def require_wrapper(probed, *, what, heads=True):
    """Exercise 3.2's answer is a MultiHeadAttentionWrapper (the book keeps the wrapper), with two heads
    unless ``heads`` is False (the values then say what the heads do)."""
    count = probed["heads"]
    said = "" if count is None else f" with {count} head{'s' if count != 1 else ''}"
    require(probed["type"] == WRAPPER and (count == 2 or not heads),
            f"expected a MultiHeadAttentionWrapper with 2 heads, got a {probed['type']}{said}", what=what,
            hint=EXERCISE_3_2_HINT)


@pytest.mark.points(1)
@pytest.mark.probe("exercise_3_2", seed=123, args=[3, 6], x=BATCH)
def test_exercise_3_2_textbook(probed):
    require_wrapper(probed, what="Exercise 3.2: exercise_3_2_wrapper(3, 6)", heads=False)
    out = tensor_in(probed, "out", "the output of the Exercise 3.2 wrapper")
    close(out, torch.stack((EXERCISE_3_2, EXERCISE_3_2)),
          what="Exercise 3.2: exercise_3_2_wrapper(3, 6)(batch), seed 123, shape (2, 6, 2). " + STALE_NOTEBOOK)


@pytest.mark.points(1)
@pytest.mark.probe("exercise_3_2", seed=27, args=[5, 8, 0.3], x=X_3_2)
def test_exercise_3_2_other_sizes(probed):
    what = "Exercise 3.2: exercise_3_2_wrapper(5, 8, 0.3), seed 27, on a (3, 7, 5) batch (eval mode)"
    require_wrapper(probed, what=what)
    # Whose mistake: the wrapper's own (built directly, its heads miss the dropout it is given), or this
    # function's call (which may pass other values: only the wrapper built directly shows a swap).
    check_head_arguments_not_swapped(probed.get("wrapper_dropout"), probed.get("wrapper_bias"), 0.3, False,
                                     "MultiHeadAttentionWrapper(5, 1, 8, 0.3, num_heads=2), built directly")
    wrapper_passes_it = probed.get("wrapper_dropout") == [0.3, 0.3]
    require(probed["dropout"] == [0.3, 0.3], f"the heads' dropout rates are {probed['dropout']}, not 0.3", what=what,
            hint="Pass the dropout argument on to the wrapper." if wrapper_passes_it else
            "MultiHeadAttentionWrapper(5, 1, 8, 0.3, num_heads=2) built directly gives its heads the dropout rates "
            f"{probed.get('wrapper_dropout')}: pass dropout to every CausalAttention head (the wrapper's checks).")
    close(tensor_in(probed, "out", "the output of the Exercise 3.2 wrapper"),
          EXERCISE_3_2_OTHER, what=what)


@pytest.mark.points(1)
@pytest.mark.probe("exercise_3_3", seed=28, x=X_3_3)
def test_exercise_3_3_gpt2_size(probed):
    what = "Exercise 3.3: exercise_3_3_gpt2_attention(), the configuration of the smallest GPT-2"
    require(probed["type"] == MHA, f"expected a MultiHeadAttention, got a {probed['type']}", what=what,
            hint="Return MultiHeadAttention(d_in, d_out, context_length, dropout, num_heads).")
    require(probed["parameters"] == EXERCISE_3_3_PARAMETERS,
            f"{probed['parameters']:,} trainable parameters, expected {EXERCISE_3_3_PARAMETERS:,}", what=what,
            hint="768-dimensional inputs and outputs, default qkv_bias=False (out_proj has its bias).",
            expected=str(EXERCISE_3_3_SHAPES), actual=str(probed["shapes"]))
    require(probed["num_heads"] == 12, f"num_heads is {probed['num_heads']}, expected 12", what=what,
            hint="GPT-2 small has 12 attention heads.")
    require(probed["mask_shape"] == [1024, 1024], f"the mask has shape {probed['mask_shape']}, expected [1024, 1024]",
            what=what, hint="GPT-2 small has a context length of 1024 tokens.")
    require(probed["dropout"] == 0.0, f"dropout is {probed['dropout']}, expected 0.0", what=what)
    close(probed.get("out"), EXERCISE_3_3_OUT,
          what=what + ": its output on a (1, 3, 768) batch, its nn.Linear layers given the same fixed numbers as the "
          "reference's, in the order they are built")
