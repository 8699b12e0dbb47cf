"""Public tests for section 3.5 (causal attention): the book's mask, weights and outputs."""

import pytest
import torch

from book_values import BATCH, CAUSAL_SEED_123, CAUSAL_WEIGHTS, V2_SCORES_789, V2_WEIGHTS_789
from grader.suite.comparisons import close
from grader.suite.plugin import calls


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
