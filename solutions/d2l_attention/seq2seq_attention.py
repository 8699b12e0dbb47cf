"""Bahdanau attention: a sequence-to-sequence decoder that attends to the encoder.

*Dive into Deep Learning*, section 11.4 ("The Bahdanau Attention Mechanism"; section 10.4
in the 0.17 edition, whose API this course follows), and BLEU from section 10.7.

A plain RNN encoder-decoder squeezes the whole source sentence into the encoder's last
hidden state. With attention, the decoder looks back at *every* encoder step each time
it emits a token: the decoder's current hidden state is the **query**, the encoder's
outputs (one per source token) are both the **keys** and the **values**, and additive
attention (your ``AdditiveAttention`` from ``scoring.py``) returns a **context** vector,
a weighted average of the encoder's outputs. The context is concatenated with the
embedding of the input token and fed to the decoder's GRU, which steps once; a dense
layer maps the GRU's output to scores over the vocabulary. The attention weights of
each step show which source tokens the decoder looked at: after training they learn an
alignment between output and input positions.

Shapes (``b`` batch size, ``T_enc`` source length, ``T_dec`` target length, ``h``
``num_hiddens``, ``e`` ``embed_size``, ``L`` ``num_layers``, ``V`` ``vocab_size``):

* ``Seq2SeqEncoder(X)`` with ``X`` token ids ``(b, T_enc)`` returns ``(outputs, state)``:
  ``outputs`` ``(T_enc, b, h)`` (the last layer's hidden state at every step; PyTorch's
  GRU puts time first) and ``state`` ``(L, b, h)`` (every layer's final hidden state).
* ``Seq2SeqAttentionDecoder.init_state((outputs, state), enc_valid_lens)`` returns
  ``(enc_outputs, state, enc_valid_lens)`` with ``enc_outputs`` ``(b, T_enc, h)``.
* ``Seq2SeqAttentionDecoder(X, state)`` with ``X`` ``(b, T_dec)`` returns ``(outputs,
  state)``: ``outputs`` ``(b, T_dec, V)`` and the new state ``[enc_outputs,
  hidden_state, enc_valid_lens]``.

Book example: ``Seq2SeqEncoder(vocab_size=10, embed_size=8, num_hiddens=16,
num_layers=2)`` and ``Seq2SeqAttentionDecoder(10, 8, 16, 2)`` in eval mode, ``X =
torch.zeros((4, 7), dtype=torch.long)``, ``state = decoder.init_state(encoder(X),
None)``; ``output, state = decoder(X, state)`` gives ``output`` of shape ``(4, 7, 10)``,
``len(state) == 3``, ``state[0]`` ``(4, 7, 16)`` and ``state[1]`` ``(2, 4, 16)``.
"""

import collections
import math

import torch
from torch import nn

# AdditiveAttention is YOUR class from scoring.py (section 11.3), which sits next to this
# file. Until scoring.py is finished, building a Seq2SeqAttentionDecoder raises the
# NotImplementedError of your AdditiveAttention stub ("AdditiveAttention.__init__ is not
# written yet"). The grader grades seq2seq_attention.py against the reference
# AdditiveAttention, so a mistake in scoring.py costs points only once.
from scoring import AdditiveAttention


class Seq2SeqEncoder(nn.Module):
    """The RNN encoder of section 10.7, given complete: an embedding, then a GRU.

    ``__init__(vocab_size, embed_size, num_hiddens, num_layers, dropout=0)`` creates
    ``self.embedding = nn.Embedding(vocab_size, embed_size)`` and ``self.rnn =
    nn.GRU(embed_size, num_hiddens, num_layers, dropout=dropout)``.
    """

    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout=0):
        """Create the embedding and the GRU (in that order)."""
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size, num_hiddens, num_layers, dropout=dropout)

    def forward(self, X):
        """Encode token ids ``X`` ``(batch_size, num_steps)``.

        Returns:
            ``(outputs, state)``: ``outputs`` ``(num_steps, batch_size, num_hiddens)``,
            the last layer's hidden state at every step; ``state`` ``(num_layers,
            batch_size, num_hiddens)``, every layer's hidden state after the last step.
        """
        X = self.embedding(X)  # (batch_size, num_steps, embed_size)
        X = X.permute(1, 0, 2)  # (num_steps, batch_size, embed_size): the GRU wants time first
        outputs, state = self.rnn(X)  # (num_steps, batch_size, num_hiddens), (num_layers, batch_size, num_hiddens)
        return outputs, state


class Seq2SeqAttentionDecoder(nn.Module):
    """An RNN decoder with additive (Bahdanau) attention over the encoder's outputs.

    ``__init__(vocab_size, embed_size, num_hiddens, num_layers, dropout=0)`` creates, in
    exactly this order (it fixes the random initial weights): ``self.attention =
    AdditiveAttention(num_hiddens, num_hiddens, num_hiddens, dropout)``,
    ``self.embedding = nn.Embedding(vocab_size, embed_size)``, ``self.rnn =
    nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers, dropout=dropout)`` and
    ``self.dense = nn.Linear(num_hiddens, vocab_size)``.

    ``init_state`` prepares the decoder's state from the encoder's result.
    ``forward`` decodes one whole (teacher-forced) target sequence, step by step:

    1. Embed the target tokens and put time first: ``(T_dec, b, e)``, so that a
       ``for x in X`` loop visits one decoding step at a time (each ``x`` is ``(b, e)``).
    2. At each step the **query** is ``hidden_state[-1]``, the *last* GRU layer's hidden
       state ``(b, h)``, with a query axis inserted: ``(b, 1, h)``. The last layer is
       the one whose output the dense layer reads, the decoder's current summary of what
       it has produced so far (for a 1-layer GRU it is the only one).
    3. ``self.attention(query, enc_outputs, enc_outputs, enc_valid_lens)``: the encoder's
       outputs are keys and values, and ``enc_valid_lens`` masks the padding at the end
       of each source sequence (key positions at or beyond a batch item's valid length
       get weight 0), so the decoder never attends to ``<pad>`` tokens. The context is
       ``(b, 1, h)``.
    4. Concatenate ``(context, x)`` on the feature axis, context first: ``(b, 1, h + e)``;
       put time first again, ``(1, b, h + e)``, and step the GRU once from
       ``hidden_state``, which gives ``out`` ``(1, b, h)`` and the new ``hidden_state``
       ``(L, b, h)`` (the query of the next step).
    5. Keep every step's ``out`` and ``self.attention.attention_weights`` (``(b, 1,
       T_enc)``); after the loop concatenate the outputs on the time axis ``(T_dec, b,
       h)``, apply ``self.dense`` ``(T_dec, b, V)`` and return them batch first.

    ``attention_weights`` is a property: the list kept by the last ``forward``, one ``(b,
    1, T_enc)`` tensor per decoding step.
    """

    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout=0):
        """Create ``attention``, ``embedding``, ``rnn``, ``dense`` (in that order).

        Args:
            vocab_size: number of target tokens (size of the embedding and of the output).
            embed_size: size of each token embedding.
            num_hiddens: size of the GRU's hidden state, and of the attention's queries,
                keys and hidden layer (they are all encoder or decoder hidden states).
            num_layers: number of GRU layers.
            dropout: dropout on the attention weights and between GRU layers.
        """
        super().__init__()
        ### BEGIN SOLUTION
        self.attention = AdditiveAttention(num_hiddens, num_hiddens, num_hiddens, dropout)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers, dropout=dropout)
        self.dense = nn.Linear(num_hiddens, vocab_size)
        self._attention_weights = []
        ### END SOLUTION

    def init_state(self, enc_outputs, enc_valid_lens):
        """The decoder's first state, from the encoder's ``(outputs, state)``.

        The encoder's ``outputs`` come time first, ``(T_enc, b, h)``, as PyTorch's GRU
        returns them; attention wants keys and values batch first, ``(b, T_enc, h)``
        (``torch.bmm`` multiplies batch by batch), so permute them once here rather than
        at every decoding step. The encoder's final ``state`` ``(L, b, h)`` becomes the
        decoder's initial hidden state, unchanged.

        Args:
            enc_outputs: the pair ``(outputs, state)`` that ``Seq2SeqEncoder`` returns.
            enc_valid_lens: ``None`` or ``(b,)``: the number of real (not padding) tokens
                of each source sequence.

        Returns:
            ``(outputs.permute(1, 0, 2), state, enc_valid_lens)``.
        """
        ### BEGIN SOLUTION
        outputs, hidden_state = enc_outputs
        return (outputs.permute(1, 0, 2), hidden_state, enc_valid_lens)  # (b, T_enc, h), (L, b, h), (b,)
        ### END SOLUTION

    def forward(self, X, state):
        """Decode the target tokens ``X`` ``(b, T_dec)`` from ``state``.

        Args:
            X: target token ids ``(b, T_dec)`` (during training, ``<bos>`` followed by
                the target shifted right; when predicting, one token: ``(b, 1)``).
            state: ``(enc_outputs, hidden_state, enc_valid_lens)``, from ``init_state``
                or from the previous call.

        Returns:
            ``(outputs, [enc_outputs, hidden_state, enc_valid_lens])``: ``outputs`` ``(b,
            T_dec, V)`` and the state after the last step. Also keeps one attention
            weight tensor ``(b, 1, T_enc)`` per step (see ``attention_weights``).
        """
        ### BEGIN SOLUTION
        enc_outputs, hidden_state, enc_valid_lens = state  # (b, T_enc, h), (L, b, h), (b,)
        X = self.embedding(X).permute(1, 0, 2)  # (T_dec, b, e)
        outputs, self._attention_weights = [], []
        for x in X:  # x: (b, e)
            query = torch.unsqueeze(hidden_state[-1], dim=1)  # (b, 1, h)
            context = self.attention(query, enc_outputs, enc_outputs, enc_valid_lens)  # (b, 1, h)
            x = torch.cat((context, torch.unsqueeze(x, dim=1)), dim=-1)  # (b, 1, h + e)
            out, hidden_state = self.rnn(x.permute(1, 0, 2), hidden_state)  # (1, b, h), (L, b, h)
            outputs.append(out)
            self._attention_weights.append(self.attention.attention_weights)  # (b, 1, T_enc)
        outputs = self.dense(torch.cat(outputs, dim=0))  # (T_dec, b, V)
        return outputs.permute(1, 0, 2), [enc_outputs, hidden_state, enc_valid_lens]  # (b, T_dec, V)
        ### END SOLUTION

    @property
    def attention_weights(self):
        """The attention weights of the last ``forward``: a list, one ``(b, 1, T_enc)`` per step."""
        ### BEGIN SOLUTION
        return self._attention_weights
        ### END SOLUTION


def bleu(pred_seq, label_seq, k):
    """BLEU of a predicted sequence against one label sequence (section 10.7.6).

    Both are strings of space-separated tokens. With ``len_pred`` and ``len_label``
    their numbers of tokens, and ``p_n`` the *clipped* precision of the n-grams of the
    prediction (the number of its n-grams that also occur in the label, each label
    n-gram matching at most as many times as it occurs there, divided by the number of
    n-grams of the prediction, ``len_pred - n + 1``):

        BLEU = exp(min(0, 1 - len_label / len_pred)) * prod_{n=1..k} p_n ** (0.5 ** n)

    The first factor is the brevity penalty: a prediction shorter than the label scores
    less, since a short prediction can easily be precise. Longer n-grams are harder to
    match, so their precision gets more weight (``p_n ** (1/2^n)`` grows with n for
    ``p_n < 1``). An exact match scores 1; no token in common scores 0.

    Args:
        pred_seq: the prediction, e.g. ``"il est calme ."``; at least ``k`` tokens.
        label_seq: the label (the reference translation).
        k: the longest n-gram to count.

    Returns:
        The score, a Python float in [0, 1].
    """
    ### BEGIN SOLUTION
    pred_tokens, label_tokens = pred_seq.split(" "), label_seq.split(" ")
    len_pred, len_label = len(pred_tokens), len(label_tokens)
    score = math.exp(min(0, 1 - len_label / len_pred))
    for n in range(1, k + 1):
        num_matches, label_subs = 0, collections.defaultdict(int)
        for i in range(len_label - n + 1):
            label_subs[" ".join(label_tokens[i: i + n])] += 1
        for i in range(len_pred - n + 1):
            if label_subs[" ".join(pred_tokens[i: i + n])] > 0:
                num_matches += 1
                label_subs[" ".join(pred_tokens[i: i + n])] -= 1
        score *= math.pow(num_matches / (len_pred - n + 1), math.pow(0.5, n))
    return score
    ### END SOLUTION
