"""Write the source notebooks course/source/<assignment>/*.ipynb (committed; run this after an edit).

    .venv/bin/python course/build_notebooks.py

The notebooks are guided walks through each chapter with the student's own modules: they
import exercises/<assignment>/, print the student's results beside the book's, and draw the
attention weights. They are not graded. Cells whose code sits between nbgrader's solution
markers are small explorations: `nbgrader generate_assignment` (run by `python -m grader
release`) replaces that code with "# YOUR CODE HERE". Nothing outside those cells may hold
solution code: the release scan would refuse it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

import seq2seq_notebook

HERE = Path(__file__).resolve().parent
BEGIN, END = "### BEGIN " + "SOLUTION", "### END " + "SOLUTION"


def md(text: str) -> dict:
    return new_markdown_cell(text.strip("\n"))


def code(text: str) -> dict:
    return new_code_cell(text.strip("\n"))


def explore(grade_id: str, text: str) -> dict:
    """An nbgrader solution cell: the student writes the code between the markers."""
    cell = new_code_cell(f"{BEGIN}\n{text.strip(chr(10))}\n{END}")
    cell.metadata["nbgrader"] = {
        "grade": False, "solution": True, "locked": False, "grade_id": grade_id, "schema_version": 3,
    }
    return cell


def setup(assignment: str) -> dict:
    return code(f'''
%load_ext autoreload
%autoreload 2

import sys
from pathlib import Path

import matplotlib.pyplot as plt
import torch

torch.set_printoptions(precision=4, sci_mode=False)


def find_exercises(assignment):
    """exercises/<assignment> of your repository, looked for from here upwards."""
    for folder in [Path.cwd(), *Path.cwd().parents]:
        if (folder / "exercises" / assignment).is_dir():
            return folder / "exercises" / assignment
    raise FileNotFoundError(f"exercises/{{assignment}} not found: open this notebook inside your repository")


EXERCISES = find_exercises("{assignment}")
sys.path.insert(0, str(EXERCISES))  # `import <module>` now imports YOUR module
print("Your modules are imported from", EXERCISES)
''')


HELPERS = code('''
def attempt(compute):
    """The value of ``compute()``, or None (with a note) while that part raises NotImplementedError."""
    try:
        return compute()
    except NotImplementedError as exc:
        print(f"not written yet: {exc}")
        return None


def first(value):
    """The first batch item of ``value`` (None stays None)."""
    return None if value is None else value[0]


def compare(label, yours, book):
    """Print your value beside the book's and say whether they agree to 4 decimals."""
    print(label)
    if yours is None:
        return
    yours = torch.as_tensor(yours).detach()
    book = torch.tensor(book)
    print("  yours:", yours)
    print("  book: ", book)
    if tuple(yours.shape) != tuple(book.shape):
        print(f"  ✗ your shape is {tuple(yours.shape)}, the book's is {tuple(book.shape)}")
    elif torch.allclose(yours.double(), book.double(), atol=1e-4):
        print("  ✓ matches the book")
    else:
        print("  ✗ differs from the book")


def heatmap(weights, title, labels=None, ax=None):
    """Draw attention weights: row i is query i, column j the token it attends to."""
    if weights is None:
        return
    w = torch.as_tensor(weights).detach().float()
    alone = ax is None
    if alone:
        _, ax = plt.subplots(figsize=(4.6, 3.8))
    rows, cols = w.shape
    image = ax.imshow(w, cmap="Blues", vmin=0.0, vmax=max(float(w.max()), 1e-6))
    ax.set_xticks(range(cols), (labels or list(range(cols)))[:cols], rotation=45, ha="right")
    ax.set_yticks(range(rows), (labels or list(range(rows)))[:rows])
    ax.set_xlabel("attends to (key)")
    ax.set_ylabel("query")
    if rows * cols <= 100:
        for i in range(rows):
            for j in range(cols):
                dark = w[i, j] > 0.6 * w.max()
                ax.text(j, i, f"{w[i, j]:.2f}", ha="center", va="center", fontsize=7, color="white" if dark else "black")
    ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, fraction=0.046)
    if alone:
        plt.show()


def heatmaps(matrices, titles, labels=None):
    """Several attention-weight matrices side by side."""
    if matrices is None:
        return
    _, axes = plt.subplots(1, len(matrices), figsize=(4.6 * len(matrices), 3.8), squeeze=False)
    for matrix, title, ax in zip(matrices, titles, axes[0]):
        heatmap(matrix, title, labels, ax=ax)
    plt.tight_layout()
    plt.show()
''')


def ch03() -> nbformat.NotebookNode:
    cells = [
        md('''
# Chapter 3: coding attention mechanisms, with your code

This notebook walks through chapter 3 of *Build a Large Language Model (From Scratch)* with
**your** modules from `exercises/ch03/`. Each step prints your result beside the value the book
prints and draws the attention weights. A part you have not written yet says
`not written yet` and the notebook carries on.

Edit the modules in `exercises/ch03/` (not this notebook), save, and re-run a cell: the
`autoreload` lines below reload your modules. The notebook is not graded; `python -m grader
check` runs the public tests, and GitHub runs the hidden tests when you push.
'''),
        setup("ch03"),
        HELPERS,
        code('''
WORDS = ["Your", "journey", "starts", "with", "one", "step"]
inputs = torch.tensor(
    [[0.43, 0.15, 0.89],  # Your     (x^1)
     [0.55, 0.87, 0.66],  # journey  (x^2)
     [0.57, 0.85, 0.64],  # starts   (x^3)
     [0.22, 0.58, 0.33],  # with     (x^4)
     [0.77, 0.25, 0.10],  # one      (x^5)
     [0.05, 0.80, 0.55]]  # step     (x^6)
)
batch = torch.stack((inputs, inputs))  # (2, 6, 3): two copies, as in the book
'''),
        md('''
## 3.3 Attention without trainable weights (`simple_attention.py`)

The query is the second token, "journey". Its attention scores are dot products with every
token; normalising them gives the attention weights; the context vector is the weighted sum of
the inputs. Each step below starts from the book's value of the step before, so one mistake
does not hide the next step.
'''),
        code('''
import simple_attention

BOOK_SCORES_2 = [0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865]
BOOK_WEIGHTS_2 = [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]

compare("attention_scores(inputs, inputs[1])",
        attempt(lambda: simple_attention.attention_scores(inputs, inputs[1])), BOOK_SCORES_2)
compare("normalize_naive(scores)",
        attempt(lambda: simple_attention.normalize_naive(torch.tensor(BOOK_SCORES_2))),
        [0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656])
compare("softmax_naive(scores)",
        attempt(lambda: simple_attention.softmax_naive(torch.tensor(BOOK_SCORES_2))), BOOK_WEIGHTS_2)
compare("context_vector(inputs, attn_weights)",
        attempt(lambda: simple_attention.context_vector(inputs, torch.tensor(BOOK_WEIGHTS_2))),
        [0.4419, 0.6515, 0.5683])
'''),
        md('''
All tokens at once: row *i* of the score matrix holds the scores of query *i*, and softmax
normalises each row.
'''),
        code('''
all_scores = attempt(lambda: simple_attention.all_attention_scores(inputs))
all_weights = attempt(lambda: simple_attention.all_attention_weights(inputs))
compare("row 1 of all_attention_scores(inputs)", first(all_scores), [0.9995, 0.9544, 0.9422, 0.4753, 0.4576, 0.6310])
compare("row 1 of all_attention_weights(inputs)", first(all_weights), [0.2098, 0.2006, 0.1981, 0.1242, 0.1220, 0.1452])
compare("all_context_vectors(inputs)", attempt(lambda: simple_attention.all_context_vectors(inputs)),
        [[0.4421, 0.5931, 0.5790], [0.4419, 0.6515, 0.5683], [0.4431, 0.6496, 0.5671],
         [0.4304, 0.6298, 0.5510], [0.4671, 0.5910, 0.5266], [0.4177, 0.6503, 0.5645]])
heatmap(all_weights, "3.3: softmax of the dot products", WORDS)
'''),
        md('''
Every row sums to 1. "journey" and "starts" have almost the same embedding, so they attend to
each other about as much as to themselves.

**Explore.** Dividing by the sum works here because all scores are positive. Try both
normalisations on scores with a negative entry, for example `torch.tensor([2.0, -1.0, 0.5])`.
Which one still gives weights between 0 and 1?
'''),
        explore("explore_normalisation", '''
odd_scores = torch.tensor([2.0, -1.0, 0.5])
print("divided by the sum:", attempt(lambda: simple_attention.normalize_naive(odd_scores)))
print("softmax:           ", attempt(lambda: simple_attention.softmax_naive(odd_scores)))
'''),
        md('''
## 3.4 Self-attention with trainable weights (`self_attention_v1.py`, `self_attention_v2.py`)

Now queries, keys and values are projections of the inputs by trainable matrices, and the
scores are scaled by the square root of the key size. The book's numbers depend on the random
initial weights, so each module is built right after `torch.manual_seed(...)`, as in the book.
'''),
        code('''
import self_attention_v1
import self_attention_v2

torch.manual_seed(123)
sa_v1 = attempt(lambda: self_attention_v1.SelfAttention_v1(3, 2))
compare("SelfAttention_v1(3, 2)(inputs), seed 123", None if sa_v1 is None else attempt(lambda: sa_v1(inputs)),
        [[0.2996, 0.8053], [0.3061, 0.8210], [0.3058, 0.8203], [0.2948, 0.7939], [0.2927, 0.7891], [0.2990, 0.8040]])

torch.manual_seed(789)
sa_v2 = attempt(lambda: self_attention_v2.SelfAttention_v2(3, 2))
compare("SelfAttention_v2(3, 2)(inputs), seed 789", None if sa_v2 is None else attempt(lambda: sa_v2(inputs)),
        [[-0.0739, 0.0713], [-0.0748, 0.0703], [-0.0749, 0.0702], [-0.0760, 0.0685], [-0.0763, 0.0679], [-0.0754, 0.0693]])
'''),
        md('''
**Exercise 3.1** (`weight_transfer.py`): both classes compute the same function. Give `sa_v1`
the weights of a `SelfAttention_v2` built with seed 123, and both return the same vectors.
'''),
        code('''
import weight_transfer

torch.manual_seed(123)
sa_v2_123 = attempt(lambda: self_attention_v2.SelfAttention_v2(3, 2))
if sa_v1 is not None and sa_v2_123 is not None:
    copied = attempt(lambda: weight_transfer.copy_v2_weights_into_v1(sa_v1, sa_v2_123) or True)
    if copied:
        with torch.no_grad():
            out_v1, out_v2 = attempt(lambda: sa_v1(inputs)), attempt(lambda: sa_v2_123(inputs))
        if out_v1 is not None and out_v2 is not None:
            compare("v1 with the v2 weights: first and last rows", out_v1[[0, -1]], [[-0.5337, -0.1051], [-0.5299, -0.1081]])
            print("largest difference to v2:", (out_v1 - out_v2).abs().max().item())
'''),
        md('''
## 3.5 Hiding future words with causal attention (`causal.py`)

A language model predicts the next word, so a token may only attend to itself and the tokens
before it. The book masks the attention weights of its `sa_v2` (seed 789): here are those
weights and scores, as inputs for your functions.
'''),
        code('''
import causal

# The attention scores and weights of the book's sa_v2 (seed 789) on `inputs`, full precision.
V2_SCORES = torch.tensor(
    [[0.28990889, 0.07162218, 0.07603326, -0.01381329, 0.13435957, -0.05112842],
     [0.46564239, 0.17225963, 0.17508702, 0.02593638, 0.17711420, 0.00851081],
     [0.45943564, 0.17031771, 0.17308104, 0.02588853, 0.17451389, 0.00895837],
     [0.26415503, 0.10239156, 0.10364803, 0.01864095, 0.09731782, 0.01222485],
     [0.21828783, 0.08735328, 0.08818767, 0.01770909, 0.07856670, 0.01444308],
     [0.34078205, 0.12703359, 0.12903105, 0.01979299, 0.12896936, 0.00775672]])
V2_WEIGHTS = torch.tensor(
    [[0.19212602, 0.16464630, 0.16516064, 0.15499417, 0.17211477, 0.15095802],
     [0.20412546, 0.16588287, 0.16621484, 0.14957766, 0.16645327, 0.14774591],
     [0.20356156, 0.16592424, 0.16624875, 0.14981547, 0.16641727, 0.14803267],
     [0.18688802, 0.16668829, 0.16683646, 0.15710352, 0.16609134, 0.15639237],
     [0.18304484, 0.16685854, 0.16695702, 0.15884051, 0.16582507, 0.15847409],
     [0.19347237, 0.16633299, 0.16656809, 0.15418623, 0.16656083, 0.15287954]])
BOOK_CAUSAL = [[1.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
               [0.5517, 0.4483, 0.0000, 0.0000, 0.0000, 0.0000],
               [0.3800, 0.3097, 0.3103, 0.0000, 0.0000, 0.0000],
               [0.2758, 0.2460, 0.2462, 0.2319, 0.0000, 0.0000],
               [0.2175, 0.1983, 0.1984, 0.1888, 0.1971, 0.0000],
               [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529]]

mask = attempt(lambda: causal.simple_causal_mask(6))
renormalised = attempt(lambda: causal.mask_and_renormalize(V2_WEIGHTS))
softmaxed = attempt(lambda: causal.causal_attention_weights(V2_SCORES, 2))
compare("mask_and_renormalize(attn_weights)", renormalised, BOOK_CAUSAL)
compare("causal_attention_weights(attn_scores, d_k=2)", softmaxed, BOOK_CAUSAL)
heatmaps([V2_WEIGHTS, mask if mask is not None else torch.zeros(6, 6), renormalised if renormalised is not None else torch.zeros(6, 6)],
         ["sa_v2's weights", "simple_causal_mask(6)", "masked and renormalised"], WORDS)
'''),
        md('''
Masking after softmax and renormalising gives exactly the same weights as setting the future
scores to −∞ before softmax: the future gets no probability either way.

Now the compact `CausalAttention` class, on the batch of two copies (seed 123, no dropout).
The weights are read from your module as they enter its `dropout` layer.
'''),
        code('''
def attention_weights_of(module, x, after_dropout=False):
    """Run ``module(x)``; return the attention weights its ``dropout`` layer received (or returned)."""
    layer = getattr(module, "dropout", None)
    if layer is None:
        print("this module has no `dropout` layer to read the attention weights from")
        return None
    seen = []
    hook = layer.register_forward_hook(lambda _, given, out: seen.append((out if after_dropout else given[0]).detach()))
    try:
        with torch.no_grad():
            module(x)
    finally:
        hook.remove()
    return seen[-1] if seen else None


torch.manual_seed(123)
ca = attempt(lambda: causal.CausalAttention(3, 2, 6, 0.0))
compare("CausalAttention(3, 2, 6, 0.0)(batch), first batch item", None if ca is None else first(attempt(lambda: ca(batch))),
        [[-0.4519, 0.2216], [-0.5874, 0.0058], [-0.6300, -0.0632], [-0.5675, -0.0843], [-0.5526, -0.0981], [-0.5299, -0.1081]])
heatmap(None if ca is None else first(attempt(lambda: attention_weights_of(ca, batch))), "CausalAttention's weights", WORDS)
'''),
        md('''
With dropout 0.5 in training mode, about half of the weights are zeroed and the others doubled.
Which ones are dropped depends on the machine and the PyTorch build, so there is no book value
to compare with here.
'''),
        code('''
torch.manual_seed(123)
ca_dropout = attempt(lambda: causal.CausalAttention(3, 2, 6, 0.5))
if ca_dropout is not None:
    ca_dropout.train()
    heatmap(first(attempt(lambda: attention_weights_of(ca_dropout, batch, after_dropout=True))), "dropout 0.5, training mode", WORDS)
'''),
        md('''
**Explore.** Your `CausalAttention` was built for up to 6 tokens (`context_length`). Run it on
the first 4 tokens only (`batch[:, :4]`) and draw the weights. Does every row still sum to 1,
with nothing above the diagonal?
'''),
        explore("explore_shorter_sequence", '''
short_weights = None if ca is None else first(attempt(lambda: attention_weights_of(ca, batch[:, :4])))
heatmap(short_weights, "the first 4 tokens", WORDS)
if short_weights is not None:
    print("row sums:", short_weights.sum(dim=-1))
'''),
        md('''
## 3.6 Multi-head attention (`mha.py`)

Several causal attention heads side by side. `MultiHeadAttentionWrapper` stacks your
`CausalAttention` heads; `MultiHeadAttention` computes all heads with one projection each
and splits them.
'''),
        code('''
import mha


def draw_heads(weights, title=""):
    """One heatmap per head of a (num_heads, tokens, tokens) tensor."""
    if weights is not None:
        heatmaps(list(weights), [f"{title}head {h}" for h in range(weights.shape[0])], WORDS)


torch.manual_seed(123)
wrapper = attempt(lambda: mha.MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2))
compare("MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)(batch), first row",
        None if wrapper is None else attempt(lambda: wrapper(batch)[0, 0]), [-0.4519, 0.2216, 0.4772, 0.1063])

torch.manual_seed(123)
multi_head = attempt(lambda: mha.MultiHeadAttention(3, 2, 6, 0.0, num_heads=2))
compare("MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)(batch), first batch item",
        None if multi_head is None else first(attempt(lambda: multi_head(batch))),
        [[0.3190, 0.4858], [0.2943, 0.3897], [0.2856, 0.3593], [0.2693, 0.3873], [0.2639, 0.3928], [0.2575, 0.4028]])
draw_heads(None if multi_head is None else first(attempt(lambda: attention_weights_of(multi_head, batch))))
'''),
        md('''
**Exercises 3.2 and 3.3.** A two-head wrapper with 2-dimensional outputs, and the GPT-2-sized
module. (The book's published solution notebook prints an older, stale output for 3.2; the
values below are the correct ones.)
'''),
        code('''
torch.manual_seed(123)
small = attempt(lambda: mha.exercise_3_2_wrapper(3, 6))
compare("exercise_3_2_wrapper(3, 6)(batch), first batch item", None if small is None else first(attempt(lambda: small(batch))),
        [[-0.5740, 0.2216], [-0.7320, 0.0155], [-0.7774, -0.0546], [-0.6979, -0.0817], [-0.6538, -0.0957], [-0.6424, -0.1065]])

gpt2 = attempt(lambda: mha.exercise_3_3_gpt2_attention())
if gpt2 is not None:
    print(f"GPT-2 attention: {sum(p.numel() for p in gpt2.parameters()):,} parameters (the book: 2,360,064)")
'''),
        md('''
**Explore.** Build a `MultiHeadAttention(3, 4, 6, 0.0, num_heads=4)` (seed 123) and draw each
head's weights with `draw_heads`. Do the heads attend in different ways?
'''),
        explore("explore_heads", '''
torch.manual_seed(123)
four_heads = attempt(lambda: mha.MultiHeadAttention(3, 4, 6, 0.0, num_heads=4))
draw_heads(None if four_heads is None else first(attempt(lambda: attention_weights_of(four_heads, batch))))
'''),
        md('''
## Next

Run `python -m grader check` in a terminal for the public tests, then commit and push: the
*Autograding Tests* workflow grades your modules with the hidden tests.
'''),
    ]
    return finish(cells, "ch03")


def d2l_attention() -> nbformat.NotebookNode:
    cells = [
        md('''
# Attention scoring, masking and positional encoding, with your code

A short walk through the attention chapter of *Dive into Deep Learning* with **your** modules
from `exercises/d2l_attention/`: your results beside the book's, and the attention weights
drawn. A part you have not written yet says `not written yet` and the notebook carries on.
Edit the modules (not this notebook), save, and re-run a cell. The notebook is not graded.
'''),
        setup("d2l_attention"),
        HELPERS,
        md('''
## Masked softmax (`masked_softmax.py`)

Padding positions (at or beyond a sequence's valid length) must get weight exactly 0.
'''),
        code('''
import masked_softmax

compare("sequence_mask(X, torch.tensor([1, 2]))",
        attempt(lambda: masked_softmax.sequence_mask(torch.tensor([[1, 2, 3], [4, 5, 6]]), torch.tensor([1, 2]))),
        [[1, 0, 0], [4, 5, 0]])

torch.manual_seed(0)
X = torch.rand(2, 2, 4)
weights = attempt(lambda: masked_softmax.masked_softmax(X, torch.tensor([2, 3])))
print(weights)
heatmaps(None if weights is None else list(weights), ["item 0: valid length 2", "item 1: valid length 3"])
'''),
        md('''
**Explore.** `valid_lens` may also give one length per query: shape `(batch_size,
num_queries)`. Try `torch.tensor([[1, 3], [2, 4]])` on the same `X` and draw the result.
'''),
        explore("explore_valid_lens_2d", '''
per_query = attempt(lambda: masked_softmax.masked_softmax(X, torch.tensor([[1, 3], [2, 4]])))
heatmaps(None if per_query is None else list(per_query), ["item 0: lengths 1, 3", "item 1: lengths 2, 4"])
'''),
        md('''
## Scoring functions (`scoring.py`)

The book's example: all ten keys are equal, so each query spreads its attention uniformly over
the valid positions, and the output is the mean of the valid values.
'''),
        code('''
import scoring

keys = torch.ones((2, 10, 2))
values = torch.arange(40, dtype=torch.float32).reshape(1, 10, 4).repeat(2, 1, 1)
valid_lens = torch.tensor([2, 6])
BOOK = [[[2.0, 3.0, 4.0, 5.0]], [[10.0, 11.0, 12.0, 13.0]]]

additive = attempt(lambda: scoring.AdditiveAttention(key_size=2, query_size=20, num_hiddens=8, dropout=0.1))
if additive is not None:
    additive.eval()
    compare("AdditiveAttention", attempt(lambda: additive(torch.normal(0, 1, (2, 1, 20)), keys, values, valid_lens)), BOOK)
    heatmap(getattr(additive, "attention_weights", torch.zeros(2, 1, 10)).reshape(2, 10), "additive attention (one query per item)")

dot = attempt(lambda: scoring.DotProductAttention(dropout=0.5))
if dot is not None:
    dot.eval()
    compare("DotProductAttention", attempt(lambda: dot(torch.normal(0, 1, (2, 1, 2)), keys, values, valid_lens)), BOOK)
'''),
        md('''
## Positional encoding (`positional_encoding.py`)

Column pairs of the table `P` oscillate at frequencies that fall along the columns; the book
plots columns 6 to 9.
'''),
        code('''
import positional_encoding

encoding = attempt(lambda: positional_encoding.PositionalEncoding(32, 0))
if encoding is not None:
    P = encoding.P[0, :60, :]
    _, (left, right) = plt.subplots(1, 2, figsize=(11, 3.5))
    for column in range(6, 10):
        left.plot(P[:, column], label=f"column {column}")
    left.set_xlabel("position")
    left.legend()
    right.imshow(P.T, aspect="auto", cmap="RdBu")
    right.set_xlabel("position")
    right.set_ylabel("encoding dimension")
    plt.show()
'''),
        md('''
## Multi-head attention (`multihead.py`)

The book's example: 5 heads over 100 hidden units map `(2, 4, 100)` queries to `(2, 4, 100)`.
'''),
        code('''
import multihead

attention = attempt(lambda: multihead.MultiHeadAttention(100, 100, 100, 100, 5, 0.5))
if attention is not None:
    attention.eval()
    queries, pairs = torch.ones((2, 4, 100)), torch.ones((2, 6, 100))
    out = attempt(lambda: attention(queries, pairs, pairs, torch.tensor([3, 2])))
    if out is not None:
        print("output shape:", tuple(out.shape), "(the book: (2, 4, 100))")
'''),
        md('''
## Next

Run `python -m grader check` in a terminal for the public tests, then commit and push: the
*Autograding Tests* workflow grades your modules with the hidden tests.
'''),
    ]
    return finish(cells, "d2l")


def seq2seq_attention() -> nbformat.NotebookNode:
    """Bahdanau attention: the book's shapes, BLEU, then training on reversal and the alignment heatmap."""
    kinds = {"md": md, "code": code}
    cells = [md(seq2seq_notebook.INTRO), setup("d2l_attention"), HELPERS]
    for number, (kind, text) in enumerate(seq2seq_notebook.CELLS):
        cells.append(explore(f"explore_seq2seq_{number}", text) if kind == "explore" else kinds[kind](text))
    return finish(cells, "s2s")


def finish(cells: list, prefix: str) -> nbformat.NotebookNode:
    """A notebook with stable cell ids (so a rebuild changes nothing) and a Python kernel."""
    notebook = new_notebook(cells=cells)
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"{prefix}-{index:02d}"
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.metadata["language_info"] = {"name": "python"}
    nbformat.validate(notebook)
    return notebook


NOTEBOOKS = {
    "ch03/ch03_attention.ipynb": ch03,
    "d2l_attention/d2l_attention.ipynb": d2l_attention,
    "d2l_attention/seq2seq_attention.ipynb": seq2seq_attention,
}


def build(source: Path = HERE / "source") -> list[Path]:
    """Write every source notebook under ``source``; return the paths."""
    written = []
    for relative, make in NOTEBOOKS.items():
        path = source / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(make(), path)
        written.append(path)
    return written


if __name__ == "__main__":
    for path in build(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "source"):
        print("wrote", path)
