"""Mutants of solutions/ch03/weight_transfer.py: (description, old, new) text replacements."""

BODY = """    sa_v1.W_query.data = sa_v2.W_query.weight.T  # (d_in, d_out)
    sa_v1.W_key.data = sa_v2.W_key.weight.T  # (d_in, d_out)
    sa_v1.W_value.data = sa_v2.W_value.weight.T  # (d_in, d_out)"""

# The weights of torch.manual_seed(123); SelfAttention_v2(3, 2), transposed: they reproduce
# the textbook's Exercise 3.1 output and nothing else.
HARD_CODED = """    sa_v1.W_query.data = torch.tensor([[-0.23542964458465576, 0.21772661805152893], [0.019124476239085197, -0.491934210062027], [-0.28674593567848206, 0.423223078250885]])
    sa_v1.W_key.data = torch.tensor([[-0.4196414053440094, 0.2614781856536865], [-0.45901766419410706, -0.21332639455795288], [-0.3648201823234558, 0.21605217456817627]])
    sa_v1.W_value.data = torch.tensor([[-0.49001413583755493, -0.1134607195854187], [-0.35029205679893494, -0.440439373254776], [-0.21198919415473938, 0.37804362177848816]])"""

MUTANTS = [
    ("hard-coded textbook weights (seed 123)", BODY, HARD_CODED),
    ("weights not transposed", BODY, BODY.replace(".weight.T", ".weight")),
    ("W_query and W_key swapped", BODY,
     BODY.replace("sa_v2.W_query.weight", "sa_v2.W_tmp.weight").replace("sa_v2.W_key.weight", "sa_v2.W_query.weight")
         .replace("sa_v2.W_tmp.weight", "sa_v2.W_key.weight")),
    ("copied from v1 into v2", BODY, """    sa_v2.W_query.weight.data = sa_v1.W_query.T
    sa_v2.W_key.weight.data = sa_v1.W_key.T
    sa_v2.W_value.weight.data = sa_v1.W_value.T"""),
    ("W_value not copied", "    sa_v1.W_value.data = sa_v2.W_value.weight.T  # (d_in, d_out)\n", ""),
    ("W_query replaced by a plain tensor (no longer a parameter)",
     "    sa_v1.W_query.data = sa_v2.W_query.weight.T  # (d_in, d_out)\n",
     "    del sa_v1.W_query\n    sa_v1.W_query = sa_v2.W_query.weight.T.detach()\n"),
]
