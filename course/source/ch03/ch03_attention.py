# %% [markdown]
# # Chapter 3: coding attention mechanisms, with your code
#
# This notebook walks through chapter 3 of *Build a Large Language Model (From Scratch)* with
# **your** modules from `exercises/ch03/`. Each step prints your result beside the value the book
# prints and draws the attention weights. A part you have not written yet says
# `not written yet`, an error in your code is shown in the cell that ran it, and the notebook
# carries on either way.
#
# Edit the modules in `exercises/ch03/` (not this notebook), save, and re-run a cell: the
# `autoreload` lines below reload your modules. The notebook is not graded; `python -m grader
# check` runs the public tests, and GitHub runs the hidden tests when you push. The helpers it
# uses (`attempt`, `compare`, `heatmap`, ...) are in `attention_helpers.py`, beside it.

# %%
# %load_ext autoreload
# %autoreload 2
import torch
from attention_helpers import (
    attempt,
    attention_weights_of,
    compare,
    first,
    heatmap,
    heatmaps,
    setup,
    your_module,
)

book = setup("ch03")  # the book's values: public_tests/ch03/book_values.py
WORDS = ["Your", "journey", "starts", "with", "one", "step"]
inputs = book.INPUTS  # (6, 3): one embedding per word
batch = book.BATCH  # (2, 6, 3): two copies, as in the book

# %% [markdown]
# ## 3.3 Attention without trainable weights (`simple_attention.py`)
#
# The query is the second token, "journey". Its attention scores are dot products with every
# token; normalising them gives the attention weights; the context vector is the weighted sum of
# the inputs. Each step below starts from the book's value of the step before, so one mistake
# does not hide the next step.

# %%
simple_attention = your_module("simple_attention")

compare("attention_scores(inputs, inputs[1])",
        lambda: simple_attention.attention_scores(inputs, inputs[1]), book.SCORES_2)
compare("normalize_naive(scores)",
        lambda: simple_attention.normalize_naive(book.SCORES_2), book.NAIVE_WEIGHTS_2)
compare("softmax_naive(scores)",
        lambda: simple_attention.softmax_naive(book.SCORES_2), book.SOFTMAX_WEIGHTS_2)
compare("context_vector(inputs, attn_weights)",
        lambda: simple_attention.context_vector(inputs, book.SOFTMAX_WEIGHTS_2), book.CONTEXT_2)

# %% [markdown]
# All tokens at once: row *i* of the score matrix holds the scores of query *i*, and softmax
# normalises each row.

# %%
all_scores = attempt(lambda: simple_attention.all_attention_scores(inputs))
all_weights = attempt(lambda: simple_attention.all_attention_weights(inputs))
compare("row 1 of all_attention_scores(inputs)", first(all_scores), book.ALL_SCORES_ROW_1)
compare("row 1 of all_attention_weights(inputs)", first(all_weights), book.ALL_WEIGHTS_ROW_1)
compare("all_context_vectors(inputs)", lambda: simple_attention.all_context_vectors(inputs), book.ALL_CONTEXT)
heatmap(all_weights, "3.3: softmax of the dot products", WORDS)

# %% [markdown]
# Every row sums to 1. "journey" and "starts" have almost the same embedding, so they attend to
# each other about as much as to themselves.
#
# **Explore.** Dividing by the sum works here because all scores are positive. Try both
# normalisations on scores with a negative entry, for example `torch.tensor([2.0, -1.0, 0.5])`.
# Which one still gives weights between 0 and 1?

# %% nbgrader={"grade": false, "solution": true, "locked": false, "grade_id": "explore_normalisation", "schema_version": 3}
### BEGIN SOLUTION
odd_scores = torch.tensor([2.0, -1.0, 0.5])
print("divided by the sum:", attempt(lambda: simple_attention.normalize_naive(odd_scores)))
print("softmax:           ", attempt(lambda: simple_attention.softmax_naive(odd_scores)))
### END SOLUTION

# %% [markdown]
# ## 3.4 Self-attention with trainable weights (`self_attention_v1.py`, `self_attention_v2.py`)
#
# Now queries, keys and values are projections of the inputs by trainable matrices, and the
# scores are scaled by the square root of the key size. The book's numbers depend on the random
# initial weights, so each module is built right after `torch.manual_seed(...)`, as in the book.

# %%
self_attention_v1 = your_module("self_attention_v1")
self_attention_v2 = your_module("self_attention_v2")

torch.manual_seed(123)
sa_v1 = attempt(lambda: self_attention_v1.SelfAttention_v1(3, 2))
if sa_v1 is not None:
    compare("SelfAttention_v1(3, 2)(inputs), seed 123", lambda: sa_v1(inputs), book.V1_SEED_123)

torch.manual_seed(789)
sa_v2 = attempt(lambda: self_attention_v2.SelfAttention_v2(3, 2))
if sa_v2 is not None:
    compare("SelfAttention_v2(3, 2)(inputs), seed 789", lambda: sa_v2(inputs), book.V2_SEED_789)

# %% [markdown]
# **Exercise 3.1** (`weight_transfer.py`): both classes compute the same function. Give `sa_v1`
# the weights of a `SelfAttention_v2` built with seed 123, and both return the same vectors.

# %%
weight_transfer = your_module("weight_transfer")

torch.manual_seed(123)
sa_v2_123 = attempt(lambda: self_attention_v2.SelfAttention_v2(3, 2))
copied = sa_v1 is not None and sa_v2_123 is not None and attempt(
    lambda: weight_transfer.copy_v2_weights_into_v1(sa_v1, sa_v2_123) or True)
if copied:
    with torch.no_grad():
        out_v1, out_v2 = attempt(lambda: sa_v1(inputs)), attempt(lambda: sa_v2_123(inputs))
    if out_v1 is not None and out_v2 is not None:
        compare("v1 with the v2 weights: first and last rows", lambda: out_v1[[0, -1]],
                torch.stack([book.EXERCISE_3_1_FIRST, book.EXERCISE_3_1_LAST]))
        print("largest difference to v2:", attempt(lambda: (out_v1 - out_v2).abs().max().item()))

# %% [markdown]
# ## 3.5 Hiding future words with causal attention (`causal.py`)
#
# A language model predicts the next word, so a token may only attend to itself and the tokens
# before it. The book masks the attention weights of its `sa_v2` (seed 789): `book.V2_WEIGHTS_789`
# and `book.V2_SCORES_789` are those weights and scores, as inputs for your functions.

# %%
causal = your_module("causal")

mask = attempt(lambda: causal.simple_causal_mask(6))
renormalised = attempt(lambda: causal.mask_and_renormalize(book.V2_WEIGHTS_789))
softmaxed = attempt(lambda: causal.causal_attention_weights(book.V2_SCORES_789, 2))
compare("mask_and_renormalize(attn_weights)", renormalised, book.CAUSAL_WEIGHTS)
compare("causal_attention_weights(attn_scores, d_k=2)", softmaxed, book.CAUSAL_WEIGHTS)
heatmaps([book.V2_WEIGHTS_789, mask, renormalised], ["sa_v2's weights", "simple_causal_mask(6)", "masked and renormalised"], WORDS)

# %% [markdown]
# Masking after softmax and renormalising gives exactly the same weights as setting the future
# scores to −∞ before softmax: the future gets no probability either way.
#
# Now the compact `CausalAttention` class, on the batch of two copies (seed 123, no dropout).
# The weights are read from your module as they enter its `dropout` layer.

# %%
torch.manual_seed(123)
ca = attempt(lambda: causal.CausalAttention(3, 2, 6, 0.0))
if ca is not None:
    compare("CausalAttention(3, 2, 6, 0.0)(batch), first batch item", lambda: first(ca(batch)), book.CAUSAL_SEED_123)
    heatmap(first(attention_weights_of(ca, batch)), "CausalAttention's weights", WORDS)

# %% [markdown]
# With dropout 0.5 in training mode, about half of the weights are zeroed and the others doubled.
# Which ones are dropped depends on the machine and the PyTorch build, so there is no book value
# to compare with here.

# %%
torch.manual_seed(123)
ca_dropout = attempt(lambda: causal.CausalAttention(3, 2, 6, 0.5))
if ca_dropout is not None:
    ca_dropout.train()
    heatmap(first(attention_weights_of(ca_dropout, batch, after_dropout=True)), "dropout 0.5, training mode", WORDS)

# %% [markdown]
# **Explore.** Your `CausalAttention` was built for up to 6 tokens (`context_length`). Run it on
# the first 4 tokens only (`batch[:, :4]`) and draw the weights. Does every row still sum to 1,
# with nothing above the diagonal?

# %% nbgrader={"grade": false, "solution": true, "locked": false, "grade_id": "explore_shorter_sequence", "schema_version": 3}
### BEGIN SOLUTION
short_weights = None if ca is None else first(attention_weights_of(ca, batch[:, :4]))
heatmap(short_weights, "the first 4 tokens", WORDS)
if short_weights is not None:
    print("row sums:", short_weights.sum(dim=-1))
### END SOLUTION

# %% [markdown]
# ## 3.6 Multi-head attention (`mha.py`)
#
# Several causal attention heads side by side. `MultiHeadAttentionWrapper` stacks your
# `CausalAttention` heads; `MultiHeadAttention` computes all heads with one projection each
# and splits them.

# %%
mha = your_module("mha")


def draw_heads(weights, title=""):
    """One heatmap per head of a (num_heads, tokens, tokens) tensor (nothing for None)."""
    if weights is not None:
        heatmaps(weights, [f"{title}head {h}" for h in range(len(weights))], WORDS)


torch.manual_seed(123)
wrapper = attempt(lambda: mha.MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2))
if wrapper is not None:
    compare("MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)(batch), first row",
            lambda: wrapper(batch)[0, 0], book.WRAPPER_ROW_1)

torch.manual_seed(123)
multi_head = attempt(lambda: mha.MultiHeadAttention(3, 2, 6, 0.0, num_heads=2))
if multi_head is not None:
    compare("MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)(batch), first batch item",
            lambda: first(multi_head(batch)), book.MHA_SEED_123)
    draw_heads(first(attention_weights_of(multi_head, batch)))

# %% [markdown]
# **Exercises 3.2 and 3.3.** A two-head wrapper with 2-dimensional outputs, and the GPT-2-sized
# module. (The book's published solution notebook prints an older, stale output for 3.2; the
# values below are the correct ones.)

# %%
torch.manual_seed(123)
small = attempt(lambda: mha.exercise_3_2_wrapper(3, 6))
if small is not None:
    compare("exercise_3_2_wrapper(3, 6)(batch), first batch item", lambda: first(small(batch)), book.EXERCISE_3_2)

gpt2 = attempt(lambda: mha.exercise_3_3_gpt2_attention())
if gpt2 is not None:
    print(f"GPT-2 attention: {sum(p.numel() for p in gpt2.parameters()):,} parameters (the book: {book.GPT2_PARAMETERS:,})")

# %% [markdown]
# **Explore.** Build a `MultiHeadAttention(3, 4, 6, 0.0, num_heads=4)` (seed 123) and draw each
# head's weights with `draw_heads`. Do the heads attend in different ways?

# %% nbgrader={"grade": false, "solution": true, "locked": false, "grade_id": "explore_heads", "schema_version": 3}
### BEGIN SOLUTION
torch.manual_seed(123)
four_heads = attempt(lambda: mha.MultiHeadAttention(3, 4, 6, 0.0, num_heads=4))
if four_heads is not None:
    draw_heads(first(attention_weights_of(four_heads, batch)))
### END SOLUTION

# %% [markdown]
# ## Next
#
# Run `python -m grader check` in a terminal for the public tests, then commit and push: the
# *Autograding Tests* workflow grades your modules with the hidden tests.
