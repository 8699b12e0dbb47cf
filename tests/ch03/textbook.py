"""Values printed in chapter 3 of *Build a Large Language Model (From Scratch)*.

Reproduced with PyTorch 2.13.0 on the CPU; compare with atol 1e-4 (three printed values sit
within a float32 ulp of a rounding boundary). Trusted side only: never sent to the sandbox.
The values the public tests also use come from their one place, ``public_tests/ch03/book_values.py``;
this file adds the ones only the hidden tests check.
"""

import torch

from grader.book import book_values

_BOOK = book_values("ch03")
INPUTS, BATCH = _BOOK.INPUTS, _BOOK.BATCH
# 3.3 simplified attention, query = INPUTS[1]
SCORES_2, NAIVE_WEIGHTS_2, SOFTMAX_WEIGHTS_2 = _BOOK.SCORES_2, _BOOK.NAIVE_WEIGHTS_2, _BOOK.SOFTMAX_WEIGHTS_2
CONTEXT_2, ALL_CONTEXT = _BOOK.CONTEXT_2, _BOOK.ALL_CONTEXT
ALL_SCORES_ROW_1, ALL_WEIGHTS_ROW_1 = _BOOK.ALL_SCORES_ROW_1, _BOOK.ALL_WEIGHTS_ROW_1
# 3.4 self-attention with trainable weights, 3.5 causal attention
V1_SEED_123, V2_SEED_789 = _BOOK.V1_SEED_123, _BOOK.V2_SEED_789
CAUSAL_WEIGHTS, CAUSAL_SEED_123 = _BOOK.CAUSAL_WEIGHTS, _BOOK.CAUSAL_SEED_123
random_inputs = _BOOK.random_inputs  # inputs no textbook printed: hard-coded answers fail on them

# Printed values only the hidden tests check
V2_WEIGHTS_ROW_1 = torch.tensor([0.1921, 0.1646, 0.1652, 0.1550, 0.1721, 0.1510])
MASKED_SCORES_ROW_2 = torch.tensor([0.4656, 0.1723])  # then -inf

# 3.6 multi-head attention (seed 123, batch)
WRAPPER_SEED_123 = torch.tensor(
    [[-0.4519, 0.2216, 0.4772, 0.1063], [-0.5874, 0.0058, 0.5891, 0.3257], [-0.6300, -0.0632, 0.6202, 0.3860],
     [-0.5675, -0.0843, 0.5478, 0.3589], [-0.5526, -0.0981, 0.5321, 0.3428], [-0.5299, -0.1081, 0.5077, 0.3493]]
)
MHA_SEED_123 = _BOOK.MHA_SEED_123

# Exercises
EXERCISE_3_1_FIRST, EXERCISE_3_1_LAST = _BOOK.EXERCISE_3_1_FIRST, _BOOK.EXERCISE_3_1_LAST
EXERCISE_3_2, EXERCISE_3_3_PARAMETERS = _BOOK.EXERCISE_3_2, _BOOK.GPT2_PARAMETERS


# 3.4.1 step by step (seed 123, W_query, W_key, W_value = torch.rand(3, 2) in that order)
STEP_QUERY_2 = torch.tensor([0.4306, 1.4551])
STEP_ATTN_SCORE_22 = torch.tensor(1.8524)
STEP_ATTN_SCORES_2 = torch.tensor([1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440])
STEP_ATTN_WEIGHTS_2 = torch.tensor([0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820])
STEP_CONTEXT_2 = torch.tensor([0.3061, 0.8210])
