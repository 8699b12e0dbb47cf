"""Values printed in chapter 3 of *Build a Large Language Model (From Scratch)*.

Reproduced with PyTorch 2.13.0 on the CPU; compare with atol 1e-4 (three printed values sit
within a float32 ulp of a rounding boundary). Trusted side only: never sent to the sandbox.
"""

import torch

INPUTS = torch.tensor(
    [[0.43, 0.15, 0.89],  # Your     (x^1)
     [0.55, 0.87, 0.66],  # journey  (x^2)
     [0.57, 0.85, 0.64],  # starts   (x^3)
     [0.22, 0.58, 0.33],  # with     (x^4)
     [0.77, 0.25, 0.10],  # one      (x^5)
     [0.05, 0.80, 0.55]]  # step     (x^6)
)
BATCH = torch.stack((INPUTS, INPUTS))  # (2, 6, 3)

# 3.3 simplified attention, query = INPUTS[1]
SCORES_2 = torch.tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])
NAIVE_WEIGHTS_2 = torch.tensor([0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656])
SOFTMAX_WEIGHTS_2 = torch.tensor([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581])
CONTEXT_2 = torch.tensor([0.4419, 0.6515, 0.5683])
ALL_SCORES_ROW_1 = torch.tensor([0.9995, 0.9544, 0.9422, 0.4753, 0.4576, 0.6310])
ALL_WEIGHTS_ROW_1 = torch.tensor([0.2098, 0.2006, 0.1981, 0.1242, 0.1220, 0.1452])
ALL_CONTEXT = torch.tensor(
    [[0.4421, 0.5931, 0.5790], [0.4419, 0.6515, 0.5683], [0.4431, 0.6496, 0.5671],
     [0.4304, 0.6298, 0.5510], [0.4671, 0.5910, 0.5266], [0.4177, 0.6503, 0.5645]]
)

# 3.4 self-attention with trainable weights
V1_SEED_123 = torch.tensor(
    [[0.2996, 0.8053], [0.3061, 0.8210], [0.3058, 0.8203], [0.2948, 0.7939], [0.2927, 0.7891], [0.2990, 0.8040]]
)
V2_SEED_789 = torch.tensor(
    [[-0.0739, 0.0713], [-0.0748, 0.0703], [-0.0749, 0.0702], [-0.0760, 0.0685], [-0.0763, 0.0679], [-0.0754, 0.0693]]
)
V2_WEIGHTS_ROW_1 = torch.tensor([0.1921, 0.1646, 0.1652, 0.1550, 0.1721, 0.1510])

# 3.5 causal attention (seed 789 v2 queries and keys)
CAUSAL_WEIGHTS = torch.tensor(
    [[1.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
     [0.5517, 0.4483, 0.0000, 0.0000, 0.0000, 0.0000],
     [0.3800, 0.3097, 0.3103, 0.0000, 0.0000, 0.0000],
     [0.2758, 0.2460, 0.2462, 0.2319, 0.0000, 0.0000],
     [0.2175, 0.1983, 0.1984, 0.1888, 0.1971, 0.0000],
     [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529]]
)
MASKED_SCORES_ROW_2 = torch.tensor([0.4656, 0.1723])  # then -inf
CAUSAL_SEED_123 = torch.tensor(
    [[-0.4519, 0.2216], [-0.5874, 0.0058], [-0.6300, -0.0632], [-0.5675, -0.0843], [-0.5526, -0.0981], [-0.5299, -0.1081]]
)

# 3.6 multi-head attention (seed 123, batch)
WRAPPER_SEED_123 = torch.tensor(
    [[-0.4519, 0.2216, 0.4772, 0.1063], [-0.5874, 0.0058, 0.5891, 0.3257], [-0.6300, -0.0632, 0.6202, 0.3860],
     [-0.5675, -0.0843, 0.5478, 0.3589], [-0.5526, -0.0981, 0.5321, 0.3428], [-0.5299, -0.1081, 0.5077, 0.3493]]
)
MHA_SEED_123 = torch.tensor(
    [[0.3190, 0.4858], [0.2943, 0.3897], [0.2856, 0.3593], [0.2693, 0.3873], [0.2639, 0.3928], [0.2575, 0.4028]]
)

# Exercises
EXERCISE_3_1_FIRST, EXERCISE_3_1_LAST = torch.tensor([-0.5337, -0.1051]), torch.tensor([-0.5299, -0.1081])
EXERCISE_3_2 = torch.tensor(
    [[-0.5740, 0.2216], [-0.7320, 0.0155], [-0.7774, -0.0546], [-0.6979, -0.0817], [-0.6538, -0.0957], [-0.6424, -0.1065]]
)
EXERCISE_3_3_PARAMETERS = 2_360_064


def random_inputs(seed: int, *shape: int) -> torch.Tensor:
    """Inputs no textbook printed: behaviour checks use them so hard-coded answers fail."""
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed))


# 3.4.1 step by step (seed 123, W_query, W_key, W_value = torch.rand(3, 2) in that order)
STEP_QUERY_2 = torch.tensor([0.4306, 1.4551])
STEP_ATTN_SCORE_22 = torch.tensor(1.8524)
STEP_ATTN_SCORES_2 = torch.tensor([1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440])
STEP_ATTN_WEIGHTS_2 = torch.tensor([0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820])
STEP_CONTEXT_2 = torch.tensor([0.3061, 0.8210])
