# %% [markdown]
# # Attention scoring, masking and positional encoding, with your code
#
# A short walk through the attention chapter of *Dive into Deep Learning* with **your** modules
# from `exercises/d2l_attention/`: your results beside the book's, and the attention weights
# drawn. A part you have not written yet says `not written yet`, an error in your code is shown
# in the cell that ran it, and the notebook carries on either way. Edit the modules (not this
# notebook), save, and re-run a cell. The notebook is not graded; its helpers are in
# `attention_helpers.py`, beside it.

# %%
# %load_ext autoreload
# %autoreload 2
import matplotlib.pyplot as plt
import torch
from attention_helpers import (
    attempt,
    check_shape,
    compare,
    heatmap,
    heatmaps,
    setup,
    your_module,
)

book = setup("d2l_attention")  # the book's examples: public_tests/d2l_attention/book_values.py

# %% [markdown]
# ## Masked softmax (`masked_softmax.py`)
#
# Padding positions (at or beyond a sequence's valid length) must get weight exactly 0.

# %%
masked_softmax = your_module("masked_softmax")

compare("sequence_mask(X, torch.tensor([1, 2]))",
        lambda: masked_softmax.sequence_mask(book.SEQ_X, book.SEQ_LENS), book.SEQ_MASKED)

X = book.SCORES  # (2, 2, 4): two items, two queries, four keys
weights = attempt(lambda: masked_softmax.masked_softmax(X, book.VALID_LENS))
print(weights)
heatmaps(weights, ["item 0: valid length 2", "item 1: valid length 3"])

# %% [markdown]
# **Explore.** `valid_lens` may also give one length per query: shape `(batch_size,
# num_queries)`. Try `torch.tensor([[1, 3], [2, 4]])` on the same `X` and draw the result.

# %% nbgrader={"grade": false, "solution": true, "locked": false, "grade_id": "explore_valid_lens_2d", "schema_version": 3}
### BEGIN SOLUTION
per_query = attempt(lambda: masked_softmax.masked_softmax(X, torch.tensor([[1, 3], [2, 4]])))
heatmaps(per_query, ["item 0: lengths 1, 3", "item 1: lengths 2, 4"])
### END SOLUTION

# %% [markdown]
# ## Scoring functions (`scoring.py`)
#
# The book's example: all ten keys are equal, so each query spreads its attention uniformly over
# the valid positions, and the output is the mean of the valid values.

# %%
scoring = your_module("scoring")

additive = attempt(lambda: scoring.AdditiveAttention(key_size=2, query_size=20, num_hiddens=8, dropout=0.1))
if additive is not None:
    additive.eval()
    compare("AdditiveAttention", lambda: additive(book.ADDITIVE_QUERIES, book.KEYS, book.VALUES, book.SCORING_VALID_LENS),
            book.POOLED)
    drawn = attempt(lambda: additive.attention_weights.reshape(2, -1))  # (2, 1, 10) -> one row per item
    heatmap(drawn, "additive attention (one query per item)")

dot = attempt(lambda: scoring.DotProductAttention(dropout=0.5))
if dot is not None:
    dot.eval()
    compare("DotProductAttention", lambda: dot(book.DOT_QUERIES, book.KEYS, book.VALUES, book.SCORING_VALID_LENS),
            book.POOLED)

# %% [markdown]
# ## Positional encoding (`positional_encoding.py`)
#
# Column pairs of the table `P` oscillate at frequencies that fall along the columns; the book
# plots columns 6 to 9.

# %%
positional_encoding = your_module("positional_encoding")

encoding = attempt(lambda: positional_encoding.PositionalEncoding(32, 0))
P = None if encoding is None else attempt(lambda: encoding.P[0, :60, :])  # (60, 32): one row per position
check_shape("P[0, :60, :]", P, (60, 32))
if P is not None and tuple(P.shape) == (60, 32):
    _, (left, right) = plt.subplots(1, 2, figsize=(11, 3.5))
    for column in range(6, 10):
        left.plot(P[:, column].detach(), label=f"column {column}")
    left.set_xlabel("position")
    left.legend()
    right.imshow(P.T.detach(), aspect="auto", cmap="RdBu")
    right.set_xlabel("position")
    right.set_ylabel("encoding dimension")
    plt.show()

# %% [markdown]
# ## Multi-head attention (`multihead.py`)
#
# The book's example: 5 heads over 100 hidden units map `(2, 4, 100)` queries to `(2, 4, 100)`.

# %%
multihead = your_module("multihead")

attention = attempt(lambda: multihead.MultiHeadAttention(100, 100, 100, 100, 5, 0.5))
if attention is not None:
    attention.eval()
    out = attempt(lambda: attention(book.MHA_QUERIES, book.MHA_KEYS, book.MHA_KEYS, book.MHA_VALID_LENS))
    check_shape("output shape", out, book.MHA_OUTPUT_SHAPE)

# %% [markdown]
# ## Next
#
# Run `python -m grader check` in a terminal for the public tests, then commit and push: the
# *Autograding Tests* workflow grades your modules with the hidden tests.
