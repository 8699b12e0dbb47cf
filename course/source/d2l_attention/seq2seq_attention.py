# %% [markdown]
# # Bahdanau attention: a decoder that learns where to look, with your code
#
# The last part of the attention chapter of *Dive into Deep Learning* puts additive attention
# into a sequence-to-sequence model: at every step the decoder's hidden state asks "which source
# tokens matter now?", and the answer, a weighted average of the encoder's outputs, goes into
# the decoder's GRU with the previous token.
#
# This notebook uses **your** `exercises/d2l_attention/seq2seq_attention.py` (and, through it,
# your `AdditiveAttention` from `scoring.py`). The book trains on an English-French corpus; here
# the model learns a task made up on the spot, **reversing strings of letters**, in a few
# seconds on a CPU, so you can watch attention learn an alignment. A part you have not written
# yet says `not written yet`, an error in your code is shown in the cell that ran it, and the
# notebook carries on either way. Edit the modules (not this notebook), save, and re-run the
# cells. The notebook is not graded; its helpers are in `attention_helpers.py`, beside it.

# %%
# %load_ext autoreload
# %autoreload 2
import torch
from attention_helpers import attempt, check_shape, compare, heatmap, setup, your_module

book = setup("d2l_attention")  # the book's examples: public_tests/d2l_attention/book_values.py

# %% [markdown]
# ## The book's shapes
#
# The book's check: an encoder and a decoder with a vocabulary of 10, embeddings of 8, 16 hidden
# units and 2 GRU layers, on a batch of 4 sequences of 7 (zero) tokens.

# %%
s2s = your_module("seq2seq_attention")


def show_book_shapes(encoder, decoder):
    """Run the book's check and print each shape beside the book's."""
    encoder.eval()
    decoder.eval()
    X = book.SEQ2SEQ_X  # (4, 7): four sequences of 7 tokens, all 0
    output, state = decoder(X, decoder.init_state(encoder(X), None))
    check_shape("output", output, book.SEQ2SEQ_OUTPUT_SHAPE)
    print(f"the state has {len(state)} items (the book: 3)")
    check_shape("state[0], the encoder's outputs, batch first", state[0], book.SEQ2SEQ_STATE_SHAPES[0])
    check_shape("state[1], the decoder's hidden state", state[1], book.SEQ2SEQ_STATE_SHAPES[1])
    weights = decoder.attention_weights
    print(f"attention_weights: {len(weights)} tensors (one per decoding step), the first of shape", tuple(weights[0].shape))


torch.manual_seed(0)
book_encoder = attempt(lambda: s2s.Seq2SeqEncoder(vocab_size=10, embed_size=8, num_hiddens=16, num_layers=2))
book_decoder = attempt(lambda: s2s.Seq2SeqAttentionDecoder(vocab_size=10, embed_size=8, num_hiddens=16, num_layers=2))
if book_encoder is not None and book_decoder is not None:
    attempt(lambda: show_book_shapes(book_encoder, book_decoder))

# %% [markdown]
# ## BLEU
#
# BLEU compares a prediction with a label: the clipped precision of its n-grams for n = 1 .. k,
# longer n-grams weighing more, times a penalty for predictions shorter than the label. Three
# cases worked out by hand:

# %%
compare("bleu('the cat sat on the mat', 'the cat sat on the mat', k=4): exact match",
        lambda: s2s.bleu("the cat sat on the mat", "the cat sat on the mat", 4), 1.0)
compare("bleu('a b', 'a b c d', k=2): precise but short, penalty exp(1 - 4/2)",
        lambda: s2s.bleu("a b", "a b c d", 2), 0.3679)
compare("bleu('a b c d', 'a b d c', k=2): p_1 = 1, p_2 = 1/3, so (1/3) ** (1/4)",
        lambda: s2s.bleu("a b c d", "a b d c", 2), 0.7598)

# %% [markdown]
# ## A task to learn: reversing letters
#
# A source is 3 to 8 letters from `a` to `h`, then `<eos>`; its target is the same letters in
# reverse order, then `<eos>`. Both are padded with `<pad>` to 9 tokens, and `enc_valid_lens`
# (letters + 1) tells the attention to ignore the padding. The decoder starts from `<bos>`.
#
# To reverse, the decoder must read the source **from the end**: when it writes the first
# letter it should look at the last source letter, then at the one before, and so on. Nobody
# tells the model this; the attention learns it.

# %%
PAD, BOS, EOS = 0, 1, 2
LETTERS = "abcdefgh"
VOCAB = ["<pad>", "<bos>", "<eos>", *LETTERS]
MAX_LETTERS = 8
NUM_STEPS = MAX_LETTERS + 1  # the letters and <eos>


def token_ids(letters):
    """'abc' -> the ids of a, b, c, <eos>, padded with <pad> to NUM_STEPS."""
    ids = [VOCAB.index(letter) for letter in letters] + [EOS]
    return torch.tensor(ids + [PAD] * (NUM_STEPS - len(ids)))


def letters_of(ids):
    """The letters of a sequence of ids, up to (not including) the first <eos>."""
    out = []
    for i in ids:
        if i == EOS:
            break
        out.append(VOCAB[i])
    return "".join(out)


def random_pairs(n, generator):
    """n random sources (n, NUM_STEPS), their valid lengths (n,), and their reversals (n, NUM_STEPS)."""
    lengths = torch.randint(3, MAX_LETTERS + 1, (n,), generator=generator)
    picks = torch.randint(len(LETTERS), (n, MAX_LETTERS), generator=generator)
    sources = ["".join(LETTERS[j] for j in row[:k]) for row, k in zip(picks.tolist(), lengths.tolist())]
    source_ids = torch.stack([token_ids(s) for s in sources])
    target_ids = torch.stack([token_ids(s[::-1]) for s in sources])
    return source_ids, lengths + 1, target_ids


examples = random_pairs(3, torch.Generator().manual_seed(7))
for source, valid_len, target in zip(*examples):
    print(f"{letters_of(source.tolist()):>8} -> {letters_of(target.tolist()):<8}  valid length {int(valid_len)}:",
          " ".join(VOCAB[i] for i in source.tolist()))


# %% [markdown]
# ## Training
#
# One GRU layer, embeddings of 16, 32 hidden units. Each step draws a fresh batch of 64 pairs.
# The decoder gets `<bos>` followed by the target shifted right (*teacher forcing*: during
# training it reads the true previous letter, not its own guess), and the loss is the cross
# entropy of its outputs against the target, ignoring the padding. 300 steps take a few seconds
# on one CPU core; the loss should fall from about 2.4 to below 0.05.

# %%
def progress(step, total, loss, width=30, every=10):
    """One line that redraws itself every ``every`` steps: a bar, the step and the loss."""
    if step % every and step != total:
        return
    done = width * step // total
    print(f"\r[{'#' * done}{'.' * (width - done)}] step {step}/{total}  loss {loss:.3f}", end="", flush=True)
    if step == total:
        print()


def train(encoder, decoder, steps=300, batch_size=64, lr=0.01):
    """Train encoder and decoder on random reversals; return the last loss."""
    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(1)
    parameters = [*encoder.parameters(), *decoder.parameters()]
    optimizer = torch.optim.Adam(parameters, lr=lr)
    loss_of = torch.nn.CrossEntropyLoss(ignore_index=PAD)  # padding costs nothing
    encoder.train()
    decoder.train()
    for step in range(1, steps + 1):
        sources, valid_lens, targets = random_pairs(batch_size, generator)
        decoder_input = torch.cat([torch.full((batch_size, 1), BOS), targets[:, :-1]], dim=1)  # teacher forcing
        logits, _ = decoder(decoder_input, decoder.init_state(encoder(sources), valid_lens))
        loss = loss_of(logits.reshape(-1, len(VOCAB)), targets.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(parameters, 1.0)
        optimizer.step()
        progress(step, steps, loss.item())
    return loss.item()


torch.manual_seed(0)  # fixes the initial weights, so the run below is the same every time
encoder = attempt(lambda: s2s.Seq2SeqEncoder(len(VOCAB), embed_size=16, num_hiddens=32, num_layers=1))
decoder = attempt(lambda: s2s.Seq2SeqAttentionDecoder(len(VOCAB), embed_size=16, num_hiddens=32, num_layers=1))
trained = encoder is not None and decoder is not None and attempt(lambda: train(encoder, decoder)) is not None
if not trained:
    print("The model is not trained: the cells below need your Seq2SeqAttentionDecoder",
          "(and the AdditiveAttention from scoring.py that it uses).")


# %% [markdown]
# ## Greedy decoding, and BLEU
#
# To predict, encode the source, start the decoder from `<bos>` and feed it its own best guess,
# one token at a time, until it writes `<eos>`. Each call of the decoder is one step, so
# `decoder.attention_weights` then holds that step's weights, `(1, 1, NUM_STEPS)`. BLEU (k = 2)
# compares each prediction with the true reversal: 1.0 for a perfect answer.

# %%
def predict(letters):
    """The model's reversal of ``letters`` and its attention weights, one row per output token."""
    encoder.eval()
    decoder.eval()
    source = token_ids(letters)[None, :]  # (1, NUM_STEPS)
    valid_len = torch.tensor([len(letters) + 1])
    with torch.no_grad():
        state = decoder.init_state(encoder(source), valid_len)
        token, output, rows = torch.tensor([[BOS]]), [], []
        for _ in range(NUM_STEPS):
            logits, state = decoder(token, state)
            token = logits.argmax(dim=2)  # (1, 1): the most likely next token
            rows.append(decoder.attention_weights[0][0, 0, : len(letters) + 1])
            output.append(int(token))
            if output[-1] == EOS:
                break
    return letters_of(output), torch.stack(rows)


def score(prediction, label):
    """BLEU with k = 2 (k = 1 for a one-letter prediction, which has no bigram)."""
    pred = " ".join(prediction) or "<empty>"
    return s2s.bleu(pred, " ".join(label), min(2, len(pred.split(" "))))


def show_prediction(letters):
    """Print the model's reversal of ``letters`` and its BLEU; return (reversal, weights) or None."""
    result = attempt(lambda: predict(letters))
    if result is not None:
        bleu_value = attempt(lambda: score(result[0], letters[::-1]))
        shown = "" if bleu_value is None else f"  bleu {bleu_value:.3f}"
        print(f"{letters:>9} => {result[0]:<9} (the reversal: {letters[::-1]}){shown}")
    return result


predictions = {}
if trained:
    for letters in ["abc", "hgfe", "bad", "cafebabe", "deafbee"]:
        predictions[letters] = show_prediction(letters)
        if predictions[letters] is None:
            break


# %% [markdown]
# ## What the decoder looked at
#
# Row `i` of the heatmap is decoding step `i` (labelled with the token the decoder wrote),
# column `j` is source token `j`; the colour is the attention weight, and each row sums to 1.
#
# **What you should see:** a bright **anti-diagonal**. The first output letter is the last
# source letter, so row 0 is bright in the column of the last letter; each following row looks
# one column further left (the printed mean positions fall from about 7 towards 0). The last
# row, where the decoder writes `<eos>`, has little left to read and looks around the start of
# the source. The padding after `<eos>` is not drawn: with
# `enc_valid_lens` its weights are exactly 0. If your rows are flat (every weight about the
# same) or the stripe runs the other way, check the query (the last layer's hidden state of
# the *current* step) and the masking.

# %%
def draw_alignment(letters, prediction, weights):
    """The decoder's attention: one row per output token, one column per source token."""
    heatmap(weights, f"reversing '{letters}'", labels=[*letters, "<eos>"], query_labels=[*prediction, "<eos>"])


def where_it_looks(weights):
    """For each output step, the weighted mean source position it attends to."""
    positions = torch.arange(weights.shape[1], dtype=weights.dtype)
    return [round(float(x), 1) for x in (weights * positions).sum(dim=1)]


if predictions.get("cafebabe") is not None:
    draw_alignment("cafebabe", *predictions["cafebabe"])
    print("where each output step looks (weighted mean source position):", where_it_looks(predictions["cafebabe"][1]))
else:
    print("No heatmap: the model was not trained or could not decode (see the messages above).")

# %% [markdown]
# **Explore.** Reverse a string of your own (3 to 8 letters from `a` to `h`, for instance
# `"hhgabc"`, with a repeated letter) with `predict`, print its BLEU and draw its alignment. Is
# the anti-diagonal still there where a letter repeats?

# %% nbgrader={"grade": false, "solution": true, "locked": false, "grade_id": "explore_own_reversal", "schema_version": 3}
### BEGIN SOLUTION
if trained:
    mine = attempt(lambda: predict("hhgabc"))
    if mine is not None:
        print("hhgabc =>", mine[0], " bleu", attempt(lambda: score(mine[0], "cbaghh")))
        draw_alignment("hhgabc", *mine)
### END SOLUTION

# %% [markdown]
# ## Next
#
# Run `python -m grader check` in a terminal for the public tests, then commit and push: the
# *Autograding Tests* workflow grades your modules with the hidden tests.
