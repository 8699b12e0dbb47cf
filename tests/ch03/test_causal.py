"""Section 3.5: hiding future words with causal attention.

Textbook values first, then the same behaviour on inputs no book printed (other seeds, sizes,
batch shapes), so hard-coded answers lose points. The probes are in probes/causal.py.
"""

import pytest
import torch

import causal as ref
import self_attention_v2
from behaviour import (
    INF, check_dropout, check_every_gradient, check_input_unchanged, check_mask_buffer, check_no_future,
    check_shorter_sequence, dropout_eval, reference_gradients, weights_from_scores,
)
from grader.suite.comparisons import close, require
from textbook import (
    BATCH, CAUSAL_SEED_123, CAUSAL_WEIGHTS, INPUTS, MASKED_SCORES_ROW_2, random_inputs,
)



def v2_scores_seed_789() -> torch.Tensor:
    """The book's scores for 3.5.1: queries times keys of the seed-789 SelfAttention_v2."""
    torch.manual_seed(789)
    sa_v2 = self_attention_v2.SelfAttention_v2(3, 2)
    with torch.no_grad():
        return sa_v2.W_query(INPUTS) @ sa_v2.W_key(INPUTS).T  # (6, 6)


SCORES = v2_scores_seed_789()
V2_WEIGHTS = torch.softmax(SCORES / 2**0.5, dim=-1)  # unmasked, d_k = 2
W4 = torch.softmax(3 * random_inputs(21, 2, 3, 5, 5), dim=-1)  # (2, 3, 5, 5): two batch dims
S3 = 4 * random_inputs(22, 3, 7, 7) - 2  # (3, 7, 7) raw scores

X_OTHER = random_inputs(31, 3, 8, 5)  # (3, 8, 5): 8 tokens, d_in 5
X_SHORT = random_inputs(32, 2, 6, 4)  # 6 tokens for context_length 10
X_FUTURE = random_inputs(33, 2, 7, 4)
X_FUTURE_CHANGED = torch.cat([X_FUTURE[:, :4], random_inputs(34, 2, 3, 4)], dim=1)  # tokens 5-7 differ
X_DROP = random_inputs(35, 2, 6, 4)
X_GRAD = random_inputs(36, 2, 5, 4)


# -- reference computations ------------------------------------------------------------------------
def reference(seed, *args, **kwargs) -> ref.CausalAttention:
    """The reference CausalAttention, built right after seeding, like the probe builds yours."""
    torch.manual_seed(seed)
    return ref.CausalAttention(*args, **kwargs)


def future_weights(seed, x):
    """The causal attention weights of the reference CausalAttention(4, 3, 7, 0.0) on ``x``."""
    m = reference(seed, 4, 3, 7, 0.0)
    with torch.no_grad():
        q, k = m.W_query(x), m.W_key(x)
    return weights_from_scores(q @ k.transpose(1, 2), k.shape[-1])


# What the reference gives on the checks' inputs: computed once, when the suite is collected (a batch's
# grading processes share them), not in every submission's checks.
RENORMALIZED_W4 = ref.mask_and_renormalize(W4)
CAUSAL_WEIGHTS_S3 = ref.causal_attention_weights(S3, 5)
CAUSAL_WEIGHTS_D_K_1 = ref.causal_attention_weights(SCORES, 1)
CAUSAL_OTHER = reference(7, 5, 4, 8, 0.0, qkv_bias=True)(X_OTHER).detach()
CAUSAL_SHORT = reference(5, 4, 3, 10, 0.0)(X_SHORT).detach()
CAUSAL_FUTURE_WEIGHTS = future_weights(11, X_FUTURE)
CAUSAL_EVAL = reference(13, 4, 3, 6, 0.0)(X_DROP).detach()
CAUSAL_FUTURE_OUTS = tuple(reference(11, 4, 3, 7, 0.0).eval()(x).detach() for x in (X_FUTURE, X_FUTURE_CHANGED))
DROPOUT_P = 0.3  # not the book's 0.5: a rate hard-coded to the book's must fail
CAUSAL_DROPOUT_EVAL = dropout_eval(reference(17, 5, 10, 5, DROPOUT_P), 5)
CAUSAL_GRADIENTS = reference_gradients(reference(19, 4, 3, 5, 0.5, qkv_bias=True), X_GRAD)
X_STRUCTURE = random_inputs(37, 2, 4, 3)
CAUSAL_STRUCTURE_OUT = reference(0, 3, 2, 5, 0.0).eval()(X_STRUCTURE).detach()
SIZES = [6, 1, 4, 9]


def check_weights(actual, expected, *, what):
    """Compare attention weights, drawing both matrices."""
    close(actual, expected, what=what, grid=True)


# -- 3.5.1: the mask, the two ways to apply it --------------------------------------------------
@pytest.mark.points(1)
@pytest.mark.probe("masks", function="simple_causal_mask", sizes=SIZES)
def test_simple_causal_mask(probed):
    count = len(probed) if isinstance(probed, list) else None
    require(count == len(SIZES), f"{len(SIZES)} masks expected, {count if count is not None else 'no list'} came back",
            what="simple_causal_mask(n) for n in 6, 1, 4, 9")
    for n, actual in zip(SIZES, probed, strict=True):
        close(actual, torch.tril(torch.ones(n, n)), what=f"simple_causal_mask({n})" + (" (textbook)" if n == 6 else ""),
              grid=True)


@pytest.mark.points(1)
@pytest.mark.probe("renormalize", function="mask_and_renormalize", weights=V2_WEIGHTS)
def test_mask_and_renormalize_textbook(probed):
    check_weights(probed["result"], CAUSAL_WEIGHTS, what="mask_and_renormalize(softmax weights of the seed-789 v2)")


@pytest.mark.points(1)
@pytest.mark.probe("renormalize", function="mask_and_renormalize", weights=W4)
def test_mask_and_renormalize_batched(probed):
    check_weights(probed["result"], RENORMALIZED_W4,
                  what="mask_and_renormalize on weights of shape (2, 3, 5, 5) (two batch dimensions)")
    check_input_unchanged(probed, W4, function="mask_and_renormalize", argument="attn_weights",
                          hint="Multiply into a new tensor (attn_weights * mask), not in place (mul_, *=, masked_fill_).")


@pytest.mark.points(1)
@pytest.mark.probe("causal_weights", function="causal_attention_weights", scores=SCORES, d_k=2)
def test_causal_attention_weights_textbook(probed):
    check_weights(probed["result"], CAUSAL_WEIGHTS, what="causal_attention_weights(seed-789 v2 scores, d_k=2)")


@pytest.mark.points(1)
@pytest.mark.probe("causal_weights", function="causal_attention_weights", scores=S3, d_k=5)
def test_causal_attention_weights_other_sizes(probed):
    check_weights(probed["result"], CAUSAL_WEIGHTS_S3,
                  what="causal_attention_weights on scores of shape (3, 7, 7), d_k=5")
    check_input_unchanged(probed, S3, function="causal_attention_weights", argument="attn_scores",
                          hint="Use the out-of-place attn_scores.masked_fill(...), not masked_fill_ (which changes "
                               "the caller's tensor).")


@pytest.mark.points(1)
@pytest.mark.probe("masked_scores", function="causal_attention_weights", scores=SCORES)
def test_masked_scores_textbook(probed):
    what = "row 2 of the masked scores that causal_attention_weights(scores, d_k=1) gives softmax"
    expected = torch.cat([MASKED_SCORES_ROW_2, torch.full((4,), -INF)])
    masked, weights = (probed.get("masked"), probed.get("weights")) if isinstance(probed, dict) else (None, probed)
    close(weights, CAUSAL_WEIGHTS_D_K_1, grid=True,
          what="causal_attention_weights(scores, d_k=1): the masked scores, seen through the weights")
    if not isinstance(masked, torch.Tensor):  # softmax written by hand: the weights it gives are judged
        return
    actual = masked[1] if masked.dim() == 2 else masked
    # Any score at or below -1e4 hides its position as well as -inf does (softmax gives it 0).
    if isinstance(actual, torch.Tensor) and actual.shape == expected.shape and actual.is_floating_point():
        actual = torch.where(actual <= -1e4, torch.full_like(actual, -INF), actual)
    close(actual, expected, what=what)


# -- 3.5.3: the CausalAttention class ----------------------------------------------------------
@pytest.mark.points(2)
@pytest.mark.probe("forward", seed=123, args=[3, 2, 6, 0.0], x=BATCH)
def test_causal_attention_textbook(probed):
    close(probed, torch.stack((CAUSAL_SEED_123, CAUSAL_SEED_123)), what="CausalAttention(3, 2, 6, 0.0)(batch), seed 123")


@pytest.mark.points(1)
@pytest.mark.probe("forward", seed=7, args=[5, 4, 8, 0.0], kwargs={"qkv_bias": True}, x=X_OTHER)
def test_causal_attention_other_seeds_sizes(probed):
    close(probed, CAUSAL_OTHER,
          what="CausalAttention(5, 4, 8, 0.0, qkv_bias=True), seed 7, on a (3, 8, 5) batch")


@pytest.mark.points(1)
@pytest.mark.probe("shorter", seed=5, args=[4, 3, 10, 0.0], x=X_SHORT)
def test_causal_attention_shorter_sequence(probed):
    check_shorter_sequence(probed, CAUSAL_SHORT,
                           what="CausalAttention(4, 3, 10, 0.0), seed 5, on 6 tokens (fewer than context_length 10)")


@pytest.mark.points(1)
@pytest.mark.probe("future", seed=11, args=[4, 3, 7, 0.0], x=X_FUTURE, changed=X_FUTURE_CHANGED)
def test_causal_attention_no_future(probed):
    check_no_future(probed, CAUSAL_FUTURE_WEIGHTS, CAUSAL_FUTURE_OUTS, weights_of="CausalAttention(4, 3, 7, 0.0)")


@pytest.mark.points(1)
@pytest.mark.probe("forward", seed=13, args=[4, 3, 6, 0.5], x=X_DROP, train=False)
def test_causal_attention_eval_turns_dropout_off(probed):
    close(probed, CAUSAL_EVAL,
          what="CausalAttention(4, 3, 6, dropout=0.5) in eval mode equals the same module with dropout 0")


@pytest.mark.points(1)
@pytest.mark.probe("dropout", seed=17, n=5, p=DROPOUT_P)
def test_causal_attention_dropout_on_weights(probed):
    check_dropout(probed, n=5, p=DROPOUT_P, blocks=[(0, 1)], expected_eval=CAUSAL_DROPOUT_EVAL,
                  what=f"CausalAttention(5, 10, 5, dropout={DROPOUT_P}) with values [I | I] in training mode "
                       "(each half of an output row shows the attention weights after dropout)")


@pytest.mark.points(1)
@pytest.mark.probe("structure", args=[3, 2, 5, 0.0], x=X_STRUCTURE)
def test_causal_attention_mask_buffer(probed):
    what = "CausalAttention(3, 2, 5, 0.0) keeps its mask with register_buffer('mask', ...)"
    require(isinstance(probed, dict), "no structure to check", what=what)
    check_mask_buffer(probed, what=what, tokens=X_STRUCTURE.shape[1])
    close(probed.get("out"), CAUSAL_STRUCTURE_OUT, what="CausalAttention(3, 2, 5, 0.0), seed 0, on a (2, 4, 3) batch")


@pytest.mark.points(1)
@pytest.mark.probe("gradients", seed=19, args=[4, 3, 5, 0.5], kwargs={"qkv_bias": True}, x=X_GRAD, train_seed=20)
def test_causal_attention_gradients(probed):
    check_every_gradient(
        probed, CAUSAL_GRADIENTS,
        what="gradients of CausalAttention(4, 3, 5, 0.5, qkv_bias=True) in eval mode, after a backward pass in "
             "training mode, reach every parameter",
        layers="W_query, W_key and W_value are nn.Linear(d_in, d_out, bias=qkv_bias) attributes of the module.")
