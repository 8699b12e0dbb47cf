"""Public tests for section 3.6 (multi-head attention) and Exercises 3.2 and 3.3.

Here MultiHeadAttentionWrapper runs on YOUR CausalAttention from causal.py; on GitHub it is
graded with the reference CausalAttention, so a mistake in causal.py costs points only once.
"""

import pytest

from book_values import BATCH, EXERCISE_3_2, GPT2_PARAMETERS, MHA_SEED_123, WRAPPER_ROW_1
from grader.suite.comparisons import close, require


@pytest.mark.points(1)
@pytest.mark.probe("output", cls="MultiHeadAttentionWrapper", seed=123, args=[3, 2, 6, 0.0], kwargs={"num_heads": 2}, x=BATCH)
def test_wrapper_textbook(probed):
    require(getattr(probed, "shape", None) == (2, 6, 4), "the wrapper's output should have shape (2, 6, 4)",
            what="MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)(batch)", expected="shape (2, 6, 4)",
            actual=str(getattr(probed, "shape", type(probed))), hint="Concatenate the heads along the last dimension.")
    close(probed[0, 0], WRAPPER_ROW_1, what="first row of MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)(batch)")


@pytest.mark.points(1)
@pytest.mark.probe("output", cls="MultiHeadAttention", seed=123, args=[3, 2, 6, 0.0], kwargs={"num_heads": 2}, x=BATCH)
def test_multi_head_attention_textbook(probed):
    require(getattr(probed, "shape", None) == (2, 6, 2), "the output should have shape (2, 6, 2)",
            what="MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)(batch)", expected="shape (2, 6, 2)",
            actual=str(getattr(probed, "shape", type(probed))))
    close(probed[0], MHA_SEED_123, what="MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)(batch), first batch item")


@pytest.mark.points(1)
@pytest.mark.probe("exercise_3_2", seed=123, x=BATCH)
def test_exercise_3_2(probed):
    close(probed[0] if getattr(probed, "dim", lambda: 0)() == 3 else probed, EXERCISE_3_2,
          what="exercise_3_2_wrapper(3, 6)(batch), first batch item (the book's published notebook prints a stale "
               "output from an older softmax(dim=1) version; these values are the correct ones)")


@pytest.mark.points(1)
@pytest.mark.probe("parameter_count")
def test_exercise_3_3_parameters(probed):
    require(probed == GPT2_PARAMETERS, f"exercise_3_3_gpt2_attention() has {probed} parameters, expected {GPT2_PARAMETERS:,}",
            what="sum(p.numel() for p in exercise_3_3_gpt2_attention().parameters())",
            hint="d_in = d_out = 768, context_length 1024, 12 heads, dropout 0.0.")
