"""Public tests for section 3.5 (causal attention): the book's mask, weights and outputs, then
inputs no book printed: fewer tokens than context_length, dropout (eval and training mode, a
rate other than the book's), the mask as a buffer, gradients, inputs left unchanged (the
reference's results, from catalog.json)."""

import pytest
import torch

from book_values import BATCH, CAUSAL_SEED_123, CAUSAL_WEIGHTS, V2_SCORES_789, V2_WEIGHTS_789, random_inputs
from dropout_behaviour import check_dropout
from grader.suite.public_reference import same
from grader.suite.comparisons import close
from grader.suite.plugin import calls

W_BATCHED = torch.softmax(3 * random_inputs(51, 2, 3, 5, 5), dim=-1)  # (2, 3, 5, 5): two batch dimensions
S_OTHER = 4 * random_inputs(52, 3, 7, 7) - 2  # (3, 7, 7) raw scores
X_SHORT = random_inputs(53, 2, 6, 4)  # 6 tokens for context_length 10
X_THREE, X_SEVEN = random_inputs(54, 2, 3, 4), random_inputs(55, 2, 7, 4)
X_DROP = random_inputs(56, 2, 6, 4)
X_GRAD = random_inputs(57, 2, 5, 4)
DROPOUT_P = 0.3  # not the book's 0.5


@pytest.mark.points(1)
@calls("simple_causal_mask", 6)
def test_simple_causal_mask(probed):
    close(probed, torch.ones(6, 6).tril(), what="simple_causal_mask(6)", grid=True)


@pytest.mark.points(1)
@calls("mask_and_renormalize", V2_WEIGHTS_789)
def test_mask_and_renormalize_textbook(probed):
    close(probed, CAUSAL_WEIGHTS, what="mask_and_renormalize(attn_weights) on the book's v2 weights", grid=True)


@pytest.mark.points(1)
@calls("causal_attention_weights", V2_SCORES_789, 2)
def test_causal_attention_weights_textbook(probed):
    close(probed, CAUSAL_WEIGHTS, what="causal_attention_weights(attn_scores, d_k=2) on the book's v2 scores", grid=True)


@pytest.mark.points(1)
@pytest.mark.probe("output", seed=123, args=[3, 2, 6, 0.0], x=BATCH)
def test_causal_attention_textbook(probed):
    close(probed, torch.stack((CAUSAL_SEED_123, CAUSAL_SEED_123)),
          what="torch.manual_seed(123); CausalAttention(3, 2, 6, 0.0)(batch)")


@pytest.mark.points(1)
@pytest.mark.probe("unchanged_input", function="mask_and_renormalize", given=W_BATCHED, args=[])
def test_mask_and_renormalize_batched(probed, reference):
    what = "mask_and_renormalize(w) for weights of shape (2, 3, 5, 5) (two batch dimensions)"
    same(probed["result"], reference["result"], what=what, grid=True)
    same(probed["input_after"], W_BATCHED, what="the weights given to mask_and_renormalize, after the call "
                                                "(they must not change: multiply into a new tensor)")


@pytest.mark.points(1)
@pytest.mark.probe("unchanged_input", function="causal_attention_weights", given=S_OTHER, args=[5])
def test_causal_attention_weights_other_sizes(probed, reference):
    what = "causal_attention_weights(scores, d_k=5) for scores of shape (3, 7, 7)"
    same(probed["result"], reference["result"], what=what, grid=True)
    same(probed["input_after"], S_OTHER, what="the scores given to causal_attention_weights, after the call "
                                              "(they must not change: use the out-of-place masked_fill)")


@pytest.mark.points(1)
@pytest.mark.probe("output", seed=5, args=[4, 3, 10, 0.0], x=X_SHORT)
def test_fewer_tokens_than_context_length(probed, reference):
    same(probed, reference, what="torch.manual_seed(5); CausalAttention(4, 3, 10, 0.0)(x), x of 6 tokens (2, 6, 4)")


@pytest.mark.points(1)
@pytest.mark.probe("outputs", seed=6, args=[4, 3, 8, 0.0], xs=[X_THREE, X_SEVEN])
def test_a_shorter_then_a_longer_input(probed, reference):
    same(probed, reference, what="torch.manual_seed(6); m = CausalAttention(4, 3, 8, 0.0); m(x of 3 tokens), "
                                 "then m(x of 7 tokens)")


@pytest.mark.points(1)
@pytest.mark.probe("output", seed=13, args=[4, 3, 6, 0.5], x=X_DROP)
def test_eval_mode_turns_dropout_off(probed, reference):
    same(probed, reference, what="torch.manual_seed(13); CausalAttention(4, 3, 6, 0.5) in eval mode (model.eval()), "
                                 "applied to x (2, 6, 4): no dropout")


@pytest.mark.points(1)
@pytest.mark.probe("dropout", seed=17, n=5, p=DROPOUT_P)
def test_dropout_on_the_attention_weights(probed, reference):
    check_dropout(probed, reference["eval"], n=5, p=DROPOUT_P, pairs=[(0, 1)],
                  what=f"CausalAttention(5, 10, 5, {DROPOUT_P}) with values [I | I], applied to the identity "
                       "in eval mode, then in training mode")


@pytest.mark.points(1)
@pytest.mark.probe("structure", args=[3, 2, 5, 0.0])
def test_mask_is_a_buffer(probed, reference):
    same(probed, reference, what="CausalAttention(3, 2, 5, 0.0): the names of its buffers and state_dict entries "
                                 "(the mask is registered with self.register_buffer)")


@pytest.mark.points(1)
@pytest.mark.probe("gradients", seed=19, args=[4, 3, 5, 0.5], kwargs={"qkv_bias": True}, x=X_GRAD, train_seed=1)
def test_gradients_after_training_mode(probed, reference):
    same(probed, reference, what="torch.manual_seed(19); CausalAttention(4, 3, 5, 0.5, qkv_bias=True): one forward "
                                 "and backward pass in training mode, then the gradients of a weighted sum of the "
                                 "output in eval mode")
