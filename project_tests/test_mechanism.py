"""The cause by mechanism (issue 34, items 1 and 2): where a wrong value first goes wrong when it is
not a tensor step that differs, and nothing said of a correct line or of one probe's numbers.

Each case is one submission (the reference solutions with one text change), written here for the
families the issue names, graded in the hidden grade and checked with the public check of a
released template; the assertions read the diagnosis both print.
"""

from __future__ import annotations

import pytest

from project_tests.test_unseen_mistakes import graded_as_students, unseen

CASES = [
    # The scale applied twice (queries divided in place, then the scores as usual): said as such.
    {"id": "v1-scaled-twice", "assignment": "ch03", "module": "self_attention_v1",
     "old": "        queries = x @ self.W_query\n",
     "new": "        queries = x @ self.W_query\n        queries /= keys.shape[-1] ** 0.5\n"},
    # Another scale, once (d_out, where a probe's heads have size 1): never said to be applied twice.
    {"id": "mha-scaled-by-d-out", "assignment": "ch03", "module": "mha",
     "old": "attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)",
     "new": "attn_weights = torch.softmax(attn_scores / self.d_out ** 0.5, dim=-1)"},
    # A loop over the scores' rows where the weights are meant: the scores are used, never "unused".
    {"id": "context-loop-over-scores", "assignment": "ch03", "module": "simple_attention",
     "old": "return all_attention_weights(inputs) @ inputs",
     "new": "return torch.stack([context_vector(inputs, w) for w in all_attention_scores(inputs)])"},
    # squeeze() of every size-1 dimension: the line that assigns self.attention_weights raises; the
    # attribute it assigns is not something it uses.
    {"id": "additive-squeeze-all", "assignment": "d2l_attention", "module": "scoring",
     "old": "scores = self.w_v(features).squeeze(-1)", "new": "scores = self.w_v(features).squeeze()"},
    # A typo in a method name: the error comes from inside torch; the student's line is named.
    {"id": "init-misspelled", "assignment": "ch03", "module": "causal",
     "old": "def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):",
     "new": "def __init_(self, d_in, d_out, context_length, dropout, qkv_bias=False):"},
    {"id": "forward-misspelled", "assignment": "ch03", "module": "causal",
     "old": "    def forward(self, x):\n        \"\"\"Causal scaled",
     "new": "    def foward(self, x):\n        \"\"\"Causal scaled"},
    # A wrong argument at a call site: raised in the student's own correct constructor.
    {"id": "ex33-d-out-per-head", "assignment": "ch03", "module": "mha",
     "old": "return MultiHeadAttention(768, 768, 1024, 0.0, num_heads=12)",
     "new": "return MultiHeadAttention(768, 64, 1024, 0.0, num_heads=12)"},
    # The same with a d_out that the heads divide: no error, only a wrong count of parameters.
    {"id": "ex33-d-out-halved", "assignment": "ch03", "module": "mha",
     "old": "return MultiHeadAttention(768, 768, 1024, 0.0, num_heads=12)",
     "new": "return MultiHeadAttention(768, 384, 1024, 0.0, num_heads=12)"},
    # A return value discarded: the GRU's new state assigned and never used.
    {"id": "gru-state-dropped", "assignment": "d2l_attention", "module": "seq2seq_attention",
     "old": "out, hidden_state = self.rnn(x.permute(1, 0, 2), hidden_state)",
     "new": "out, new_state = self.rnn(x.permute(1, 0, 2), hidden_state)"},
    # The same, the new state dropped on purpose (``_h``): the correct lines of the loop are not blamed.
    {"id": "gru-state-discarded", "assignment": "d2l_attention", "module": "seq2seq_attention",
     "old": "out, hidden_state = self.rnn(x.permute(1, 0, 2), hidden_state)",
     "new": "out, _h = self.rnn(x.permute(1, 0, 2), hidden_state)"},
    # A misspelled attribute that a check reads: nothing to read, whatever the probe then says.
    {"id": "weights-misspelled", "assignment": "d2l_attention", "module": "scoring",
     "old": "        scores = self.w_v(features).squeeze(-1)  # (b, num_queries, num_kv_pairs)\n"
            "        self.attention_weights = masked_softmax(scores, valid_lens)\n"
            "        return torch.bmm(self.dropout(self.attention_weights), values)",
     "new": "        scores = self.w_v(features).squeeze(-1)  # (b, num_queries, num_kv_pairs)\n"
            "        self.attention_weigths = masked_softmax(scores, valid_lens)\n"
            "        return torch.bmm(self.dropout(self.attention_weigths), values)"},
    # A buffer built wrong in __init__ (the past hidden, the future kept): the line that makes it is shown.
    {"id": "mask-hides-the-past", "assignment": "ch03", "module": "causal",
     "old": '"mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)',
     "new": '"mask", torch.ones(context_length, context_length).tril(diagonal=-1)'},
    # A copy in the wrong direction: sa_v2 changed, said first on both sides.
    {"id": "copy-into-v2", "assignment": "ch03", "module": "weight_transfer",
     "old": "sa_v1.W_key.data = sa_v2.W_key.weight.T", "new": "sa_v2.W_key.weight.data = sa_v1.W_key.T"},
    # A helper called where another was meant: softmax_naive is right (it sums over dim 0, as asked
    # for one vector); calling it on the matrix of scores is the mistake.
    {"id": "helper-for-rows", "assignment": "ch03", "module": "simple_attention",
     "old": "return torch.softmax(all_attention_scores(inputs), dim=-1)",
     "new": "return softmax_naive(all_attention_scores(inputs))"},
    # A reduction over the whole tensor instead of each row, on a line of its own.
    {"id": "sum-of-everything", "assignment": "ch03", "module": "simple_attention",
     "old": "return torch.softmax(all_attention_scores(inputs), dim=-1)",
     "new": "e = torch.exp(all_attention_scores(inputs))\n    total = e.sum()\n    return e / total"},
    {"id": "renormalize-by-total", "assignment": "ch03", "module": "causal",
     "old": "row_sums = masked.sum(dim=-1, keepdim=True)", "new": "row_sums = masked.sum()"},
    # A missing keepdim on the line that raises, after a correct layout of the student's own (heads
    # flattened into the batch, a shape the reference never makes): that layout is not blamed.
    {"id": "keepdim-on-the-crash-line", "assignment": "ch03", "module": "mha",
     "old": "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n",
     "new": "        e = torch.exp(attn_scores.flatten(0, 1) / keys.shape[-1] ** 0.5)\n"
            "        attn_weights = (e / e.sum(dim=-1)).view(b, self.num_heads, num_tokens, num_tokens)\n"},
    # A reduction over another dimension than the reference's: the dimension is said, not keepdim.
    {"id": "softmax-naive-other-dimension", "assignment": "ch03", "module": "simple_attention",
     "old": "    return torch.exp(x) / torch.exp(x).sum(dim=0)\n",
     "new": "    e = torch.exp(x)\n    return e / e.sum(-1)\n"},
    # Exercise 3.2's call passing other values than its own (a bias, no dropout) to a correct wrapper:
    # the call is blamed, and no swap inside the wrapper is claimed.
    {"id": "ex32-call-passes-other-values", "assignment": "ch03", "module": "mha",
     "old": "return MultiHeadAttentionWrapper(d_in, 1, context_length, dropout, num_heads=2)",
     "new": "return MultiHeadAttentionWrapper(d_in, 1, context_length, 0.0, num_heads=2, qkv_bias=True)"},
    # A result dropped before a call to a helper that passes its own checks: the call and the dropped line.
    {"id": "masked-softmax-flatten-dropped", "assignment": "d2l_attention", "module": "masked_softmax",
     "old": "        valid_lens = valid_lens.reshape(-1)  # (batch_size * num_queries,)\n",
     "new": "        valid_lens.flatten()\n"},
    # A shape gone wrong before a call into the reference's masked_softmax (hidden: all its steps told at
    # the calling line): the line that made it is shown on both sides.
    {"id": "additive-squeeze-every-dimension", "assignment": "d2l_attention", "module": "scoring",
     "old": "        scores = self.w_v(features).squeeze(-1)  # (b, num_queries, num_kv_pairs)\n",
     "new": "        scores = torch.squeeze(self.w_v(features))\n"},
    # A product transposed as a whole on its own line (.mT, unrecorded): shown as the line leaves it.
    {"id": "v1-product-transposed-whole", "assignment": "ch03", "module": "self_attention_v1",
     "old": "        return attn_weights @ values\n",
     "new": "        context = (values.T @ attn_weights).mT\n        return context\n"},
    # A number given to a helper that passes its own checks (the public one by a round-trip probe):
    # the helper's lines are not listed; the attribute given is.
    {"id": "multihead-twice-the-heads", "assignment": "d2l_attention", "module": "multihead",
     "old": "        self.num_heads = num_heads\n",
     "new": "        self.num_heads = 2 * num_heads\n"},
    # A length taken from the wrong dimension: the line of that number is where the wrong shape starts.
    {"id": "sequence-mask-length-of-rows", "assignment": "d2l_attention", "module": "masked_softmax",
     "old": "    maxlen = X.size(1)\n", "new": "    maxlen = X.shape[0]\n"},
    # A wrong shape computed from the inputs (not from numbers alone): its own line, never its scale's.
    {"id": "dot-einsum-keys-first", "assignment": "d2l_attention", "module": "scoring",
     "old": "        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)  # (b, num_queries, num_kv_pairs)\n",
     "new": "        scores = torch.einsum(\"bqd,bkd->bkq\", queries, keys) / math.sqrt(d)\n"},
    # A loop over a tensor whose dimensions are in another order than the reference's (time second):
    # its rows' shape is explained by the order, and the line that made the tensor is named.
    {"id": "decoder-loop-batch-first", "assignment": "d2l_attention", "module": "seq2seq_attention",
     "old": "        X = self.embedding(X).permute(1, 0, 2)  # (T_dec, b, e)\n",
     "new": "        X = self.embedding(X)\n"},
    # One head at a time, each head's scores right, the scale wrong inside the loop: the first
    # differing part is shown at the loop's own line, never a head's (correct) scores as the cause.
    {"id": "mha-heads-in-a-loop-scaled-by-d-out", "assignment": "ch03", "module": "mha",
     "old": "        attn_scores = queries @ keys.transpose(2, 3)  # (b, num_heads, num_tokens, num_tokens)\n"
            "        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]  # (num_tokens, num_tokens)\n"
            "        attn_scores.masked_fill_(mask_bool, -torch.inf)\n"
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "\n"
            "        context_vec = (attn_weights @ values).transpose(1, 2)  # (b, num_tokens, num_heads, head_dim)\n",
     "new": "        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]\n"
            "        heads = []\n"
            "        for h in range(self.num_heads):\n"
            "            s = queries[:, h] @ keys[:, h].transpose(1, 2)\n"
            "            s = s.masked_fill(mask_bool, -torch.inf) / self.d_out ** 0.5\n"
            "            heads.append(self.dropout(torch.softmax(s, dim=-1)) @ values[:, h])\n"
            "        context_vec = torch.stack(heads, dim=2)\n"},
    # The weights kept under a near name in forward (each step's appended there): the property the
    # check reads returns the attribute forward never assigns.
    {"id": "decoder-weights-kept-under-another-name", "assignment": "d2l_attention", "module": "seq2seq_attention",
     "old": '        outputs, self._attention_weights = [], []\n        for x in X:  # x: (b, e)\n            query = torch.unsqueeze(hidden_state[-1], dim=1)  # (b, 1, h)\n            context = self.attention(query, enc_outputs, enc_outputs, enc_valid_lens)  # (b, 1, h)\n            x = torch.cat((context, torch.unsqueeze(x, dim=1)), dim=-1)  # (b, 1, h + e)\n            out, hidden_state = self.rnn(x.permute(1, 0, 2), hidden_state)  # (1, b, h), (L, b, h)\n            outputs.append(out)\n            self._attention_weights.append(self.attention.attention_weights)  # (b, 1, T_enc)\n',
     "new": '        outputs, self._attention_weight = [], []\n        for x in X:  # x: (b, e)\n            query = torch.unsqueeze(hidden_state[-1], dim=1)  # (b, 1, h)\n            context = self.attention(query, enc_outputs, enc_outputs, enc_valid_lens)  # (b, 1, h)\n            x = torch.cat((context, torch.unsqueeze(x, dim=1)), dim=-1)  # (b, 1, h + e)\n            out, hidden_state = self.rnn(x.permute(1, 0, 2), hidden_state)  # (1, b, h), (L, b, h)\n            outputs.append(out)\n            self._attention_weight.append(self.attention.attention_weights)  # (b, 1, T_enc)\n'},
    # Heads interleaved in the batch (d2l's transpose_qkv), attended one at a time (rows k::h): the
    # keys given as values. Each head's scores and weights are right: the context vectors are named.
    {"id": "multihead-loop-keys-as-values", "assignment": "d2l_attention", "module": "multihead",
     "old": '        output = self.attention(queries, keys, values, valid_lens)  # (batch_size * num_heads, num_queries, num_hiddens / num_heads)\n',
     "new": "        h = self.num_heads\n        heads = []\n        for k in range(h):\n"
            "            lens = None if valid_lens is None else valid_lens[k::h]\n"
            "            heads.append(self.attention(queries[k::h], keys[k::h], keys[k::h], lens))\n"
            "        output = torch.stack(heads, dim=1).reshape(-1, *heads[0].shape[1:])\n"},
    # The same loop stopping one head short: the head never computed is named, no line of a right head.
    {"id": "multihead-loop-one-head-short", "assignment": "d2l_attention", "module": "multihead",
     "old": '        output = self.attention(queries, keys, values, valid_lens)  # (batch_size * num_heads, num_queries, num_hiddens / num_heads)\n',
     "new": "        h = self.num_heads\n"
            "        output = torch.zeros(queries.shape[0], queries.shape[1], values.shape[2])\n"
            "        for k in range(1, h):\n"
            "            lens = None if valid_lens is None else valid_lens[k::h]\n"
            "            output[k::h] = self.attention(queries[k::h], keys[k::h], values[k::h], lens)\n"},
    # Two parameters made in another order (W_value before W_key): what each then holds is said.
    {"id": "v1-value-made-before-key", "assignment": "ch03", "module": "self_attention_v1",
     "old": "        self.W_key = nn.Parameter(torch.rand(d_in, d_out))\n        self.W_value = nn.Parameter(torch.rand(d_in, d_out))\n",
     "new": "        self.W_value = nn.Parameter(torch.rand(d_in, d_out))\n        self.W_key = nn.Parameter(torch.rand(d_in, d_out))\n"},
    # A loop over the batch one item short, stacked: the output's shape differs, so the join and the
    # loop are shown (a missing part is named only where the output has the reference's shape).
    {"id": "causal-batch-loop-one-short", "assignment": "ch03", "module": "causal",
     "old": '        attn_scores = queries @ keys.transpose(1, 2)  # (b, num_tokens, num_tokens)\n        attn_scores.masked_fill_(\n            self.mask.bool()[:num_tokens, :num_tokens], -torch.inf\n        )\n        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n        attn_weights = self.dropout(attn_weights)\n        context_vec = attn_weights @ values  # (b, num_tokens, d_out)\n        return context_vec\n',
     "new": '        mask = self.mask.bool()[:num_tokens, :num_tokens]\n        outs = []\n        for i in range(b - 1):\n            scores = (queries[i] @ keys[i].T).masked_fill(mask, -torch.inf)\n            weights = self.dropout(torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1))\n            outs.append(weights @ values[i])\n        return torch.stack(outs)\n'},
    # BLEU, computed without tensors: the line comes from the numbers its lines assign.
    {"id": "bleu-over-label-length", "assignment": "d2l_attention", "module": "seq2seq_attention",
     "old": "        score *= math.pow(num_matches / (len_pred - n + 1), math.pow(0.5, n))",
     "new": "        precision = num_matches / len_label\n        score *= math.pow(precision, math.pow(0.5, n))"},
    {"id": "bleu-uniform-weights", "assignment": "d2l_attention", "module": "seq2seq_attention",
     "old": "score *= math.pow(num_matches / (len_pred - n + 1), math.pow(0.5, n))",
     "new": "score *= (num_matches / (len_pred - n + 1)) ** (1 / k)"},
    # A BLEU mistake no catalog entry knows (the prediction's length counted in characters): the
    # first line that assigns a number the reference never computes, or another value of a name both
    # assign once.
    {"id": "bleu-prediction-in-characters", "assignment": "d2l_attention", "module": "seq2seq_attention",
     "old": "len_pred, len_label = len(pred_tokens), len(label_tokens)",
     "new": "len_pred, len_label = len(pred_seq), len(label_tokens)"},
    # The same factor where one check has a single token (too small to show a factor by itself): the
    # hidden grade says it in the sizes, as the public check does.
    {"id": "v2-scaled-by-num-tokens", "assignment": "ch03", "module": "self_attention_v2",
     "old": "attn_scores / keys.shape[-1] ** 0.5", "new": "attn_scores / keys.shape[-2] ** 0.5"},
    # The right values in another shape (flattened at the end): said with both shapes, on both sides.
    {"id": "result-flattened", "assignment": "d2l_attention", "module": "masked_softmax",
     "old": "return nn.functional.softmax(X.reshape(shape), dim=-1)",
     "new": "return nn.functional.softmax(X.reshape(shape), dim=-1).flatten(0, 1)"},
    # A loop bound off by one: the last row is never written; the zeros it started from are no mistake.
    {"id": "loop-bound-off-by-one", "assignment": "ch03", "module": "simple_attention",
     "old": "return all_attention_weights(inputs) @ inputs",
     "new": "weights = all_attention_weights(inputs)\n    context = torch.zeros(inputs.shape[0], inputs.shape[1])\n"
            "    for i in range(inputs.shape[0] - 1):\n        context[i] = weights[i] @ inputs\n    return context"},
    # A join of pieces made in a loop one short: a shape the reference never makes, shown at the join
    # with the loop that made too few pieces (not at a correct line that makes one piece).
    {"id": "rows-loop-one-short", "assignment": "ch03", "module": "causal",
     "old": "        context_vec = attn_weights @ values  # (b, num_tokens, d_out)\n",
     "new": "        rows = [attn_weights[:, t:t + 1] @ values for t in range(num_tokens - 1)]\n"
            "        context_vec = torch.cat(rows, dim=1)\n"},
    # The heads joined along the wrong axis: the reference joins the same pieces along another one.
    {"id": "heads-joined-on-tokens", "assignment": "ch03", "module": "mha",
     "old": "return torch.cat([head(x) for head in self.heads], dim=-1)",
     "new": "return torch.cat([head(x) for head in self.heads], dim=1)"},
    # Pieces of the wrong width joined rightly: the join is not blamed, nor said against a shape of the
    # reference's that differs along the joined dimension by chance (the attention weights' (2, 6, 6)).
    {"id": "wrapper-pieces-too-wide", "assignment": "ch03", "module": "mha",
     "old": "return MultiHeadAttentionWrapper(d_in, 1, context_length, dropout, num_heads=2)",
     "new": "return MultiHeadAttentionWrapper(d_in, 2, context_length, dropout, num_heads=2)"},
    # Heads taken one by one (each a part of a value the reference holds) and joined in another order.
    {"id": "heads-taken-one-by-one", "assignment": "d2l_attention", "module": "multihead",
     "old": "    X = X.reshape(X.shape[0], X.shape[1], num_heads, -1)  # (batch_size, n, num_heads, num_hiddens / num_heads)\n"
            "    X = X.permute(0, 2, 1, 3)  # (batch_size, num_heads, n, num_hiddens / num_heads)\n"
            "    return X.reshape(-1, X.shape[2], X.shape[3])",
     "new": "    size = X.shape[-1] // num_heads\n"
            "    heads = [X.narrow(-1, k * size, size) for k in range(num_heads)]\n"
            "    return torch.cat(heads, dim=0)"},
    # reshape where permute is meant: the right numbers in the reference's shape, each at a wrong place.
    {"id": "reshape-for-permute", "assignment": "d2l_attention", "module": "multihead",
     "old": "    X = X.permute(0, 2, 1, 3)  # (batch_size, n, num_heads, head_size)",
     "new": "    X = X.reshape(X.shape[0], X.shape[2], X.shape[1], X.shape[3])"},
    # The heads merged in another order (head_size before num_heads): transpose_output alone and the
    # attention that uses it differ at different stages, each with its columns in another order.
    {"id": "output-permute-heads-last", "assignment": "d2l_attention", "module": "multihead",
     "old": "    X = X.permute(0, 2, 1, 3)  # (batch_size, n, num_heads, head_size)",
     "new": "    X = X.permute(0, 2, 3, 1)  # (batch_size, n, head_size, num_heads)"},
    # The scale left out of a scorer that calls masked_softmax: the public check runs the student's own
    # masked_softmax.py, the hidden grade the reference's; both show the line calling it.
    {"id": "dot-product-unscaled", "assignment": "d2l_attention", "module": "scoring",
     "old": "scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)",
     "new": "scores = torch.bmm(queries, keys.transpose(1, 2))"},
    # A loop over heads one short, its results stacked: the stack shown, and the loop that made too few.
    {"id": "head-loop-one-short", "assignment": "d2l_attention", "module": "multihead",
     "old": "        output = self.attention(queries, keys, values, valid_lens)",
     "new": "        outputs = []\n"
            "        for k in range(self.num_heads - 1):\n"
            "            idx = torch.arange(k, queries.shape[0], self.num_heads)\n"
            "            outputs.append(self.attention(queries[idx], keys[idx], values[idx],\n"
            "                                          None if valid_lens is None else valid_lens[idx]))\n"
            "        output = torch.stack(outputs, dim=1).reshape(-1, *outputs[0].shape[1:])"},
    # A loop over heads, correct but for the mask, which is not cut to the number of tokens: the
    # per-head steps (shapes the reference never makes whole) are another correct way, never blamed.
    {"id": "head-loop-mask-uncut", "assignment": "ch03", "module": "mha",
     "old": "        attn_scores = queries @ keys.transpose(2, 3)  # (b, num_heads, num_tokens, num_tokens)\n"
            "        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]  # (num_tokens, num_tokens)\n"
            "        attn_scores.masked_fill_(mask_bool, -torch.inf)\n"
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n\n"
            "        context_vec = (attn_weights @ values).transpose(1, 2)  # (b, num_tokens, num_heads, head_dim)\n",
     "new": "        per_head = []\n"
            "        for h in range(self.num_heads):\n"
            "            q, k, v = queries.select(1, h), keys.select(1, h), values.select(1, h)\n"
            "            s = q @ k.transpose(-2, -1)\n"
            "            s = torch.where(self.mask.bool(), -torch.inf, s)\n"
            "            w = self.dropout(torch.softmax(s / self.head_dim ** 0.5, dim=-1))\n"
            "            per_head.append(w @ v)\n"
            "        context_vec = torch.stack(per_head, dim=2)  # (b, num_tokens, num_heads, head_dim)\n"},
    # A softmax by hand that masks the exponentials (a correct way: the masked scores are never a step
    # of theirs), its rows summed along the wrong dimension: the line with the sum, not the scaling.
    {"id": "exp-masked-then-summed-over-columns", "assignment": "ch03", "module": "causal",
     "old": "    masked = attn_scores.masked_fill(mask, -torch.inf)\n    return torch.softmax(masked / d_k**0.5, dim=-1)\n",
     "new": "    scaled = attn_scores / d_k**0.5\n"
            "    powered = torch.exp(scaled).masked_fill(mask, 0.0)\n"
            "    return powered / powered.sum(dim=0, keepdim=True)\n"},
    # The right weights, then changed before they are returned: the line that changes them.
    {"id": "weights-renormalised-on-return", "assignment": "ch03", "module": "causal",
     "old": "    return torch.softmax(masked / d_k**0.5, dim=-1)\n",
     "new": "    weights = torch.softmax(masked / d_k**0.5, dim=-1)\n    return weights / weights.sum()\n"},
    # The module's own helper that makes the mask of allowed positions, given where the positions to
    # hide are meant: never the helper (which passes its own checks); the line that fills where the
    # mask is True, with the mask said to be the reference's inverted, on both sides.
    {"id": "allowed-mask-used-as-hidden", "assignment": "ch03", "module": "causal",
     "old": "    mask = torch.triu(\n"
            "        torch.ones(n, n, dtype=torch.bool, device=attn_scores.device), diagonal=1\n"
            "    )  # (n, n), True above the diagonal\n"
            "    masked = attn_scores.masked_fill(mask, -torch.inf)\n",
     "new": "    mask = simple_causal_mask(n).bool()\n"
            "    masked = torch.where(mask, torch.full_like(attn_scores, float(\"-inf\")), attn_scores)\n"},
    # One line pairs lengths with the wrong rows for a 1-D and a 2-D valid_lens alike (expanded to
    # (batch, queries), flattened transposed): the catalog's tiled-1-D and transposed-2-D mistakes each
    # reproduce one kind of input; one story is told, the line, never two concepts; the correct
    # expand (its lengths are the reference's, in another shape) is not where it goes wrong.
    {"id": "lens-expanded-then-flattened-transposed", "assignment": "d2l_attention", "module": "masked_softmax",
     "old": "        valid_lens = torch.repeat_interleave(valid_lens, shape[1])  # (batch_size * num_queries,)\n"
            "    else:\n"
            "        valid_lens = valid_lens.reshape(-1)  # (batch_size * num_queries,)\n",
     "new": "        valid_lens = valid_lens.unsqueeze(1).expand(-1, shape[1])\n"
            "    valid_lens = valid_lens.t().flatten()\n"},
    # A loop over the names that starts at 1: W_query keeps the values it had before the copy, which
    # both sides' checks say (an exact relation), with the hint to copy all three.
    {"id": "copy-loop-skips-the-first-name", "assignment": "ch03", "module": "weight_transfer",
     "old": "    sa_v1.W_query.data = sa_v2.W_query.weight.T  # (d_in, d_out)\n"
            "    sa_v1.W_key.data = sa_v2.W_key.weight.T  # (d_in, d_out)\n"
            "    sa_v1.W_value.data = sa_v2.W_value.weight.T  # (d_in, d_out)\n",
     "new": "    names = [\"W_query\", \"W_key\", \"W_value\"]\n"
            "    for i in range(1, len(names)):\n"
            "        getattr(sa_v1, names[i]).data = getattr(sa_v2, names[i]).weight.T\n"},
    # The head size stored as the number of heads: the transposes, which pass their own checks (the
    # public ones through a probe given functions=[...]), are never shown as the mistake on either side.
    {"id": "heads-stored-as-head-size", "assignment": "d2l_attention", "module": "multihead",
     "old": "        self.num_heads = num_heads\n", "new": "        self.num_heads = num_hiddens // num_heads\n"},
    # The first GRU layer's state as the query, in a loop over time indices: the concept is said, and
    # no line is guessed beside it from a step of another shape (the embedding of one step).
    {"id": "query-from-first-layer-indexed-loop", "assignment": "d2l_attention", "module": "seq2seq_attention",
     "old": '        enc_outputs, hidden_state, enc_valid_lens = state  # (b, T_enc, h), (L, b, h), (b,)\n        X = self.embedding(X).permute(1, 0, 2)  # (T_dec, b, e)\n        outputs, self._attention_weights = [], []\n        for x in X:  # x: (b, e)\n            query = torch.unsqueeze(hidden_state[-1], dim=1)  # (b, 1, h)\n            context = self.attention(query, enc_outputs, enc_outputs, enc_valid_lens)  # (b, 1, h)\n            x = torch.cat((context, torch.unsqueeze(x, dim=1)), dim=-1)  # (b, 1, h + e)\n            out, hidden_state = self.rnn(x.permute(1, 0, 2), hidden_state)  # (1, b, h), (L, b, h)\n            outputs.append(out)\n            self._attention_weights.append(self.attention.attention_weights)  # (b, 1, T_enc)\n        outputs = self.dense(torch.cat(outputs, dim=0))  # (T_dec, b, V)\n',
     "new": '        enc_outputs, hidden_state, enc_valid_lens = state\n        embedded = self.embedding(X).transpose(0, 1)\n        outputs, self._attention_weights = [], []\n        for t in range(embedded.shape[0]):\n            query = hidden_state[0].unsqueeze(1)\n            context = self.attention(query, enc_outputs, enc_outputs, enc_valid_lens)\n            step = torch.cat([context, embedded[t].unsqueeze(1)], dim=2).transpose(0, 1)\n            out, hidden_state = self.rnn(step, hidden_state)\n            outputs.append(out)\n            self._attention_weights.append(self.attention.attention_weights)\n        outputs = self.dense(torch.cat(outputs, dim=0))\n'},
    # A property returning a misspelled attribute: a check refuses what it gives; nothing of the
    # student's raised, and nothing says so.
    {"id": "weights-property-misspelled", "assignment": "d2l_attention", "module": "seq2seq_attention",
     "old": "        return self._attention_weights\n", "new": "        return self._attention_weigths\n"},
    # Divided by the square root of the number of tokens, not of d_k: a factor that differs per probe.
    {"id": "scaled-by-num-tokens", "assignment": "ch03", "module": "causal",
     "old": "attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)",
     "new": "attn_weights = torch.softmax(attn_scores / num_tokens ** 0.5, dim=-1)"},
    # A hand-written softmax that exponentiates the unmasked scores (shifted) and masks afterwards, a
    # correct way, but sums the unmasked ones: the sum's line is blamed, never the exponential's.
    {"id": "handwritten-denominator-unmasked", "assignment": "d2l_attention", "module": "masked_softmax",
     "old": "    X = sequence_mask(\n"
            "        X.reshape(-1, shape[-1]), valid_lens, value=-1e6\n"
            "    )  # (batch_size * num_queries, num_keys)\n"
            "    return nn.functional.softmax(X.reshape(shape), dim=-1)",
     "new": "    hidden = torch.arange(shape[-1])[None, :] >= valid_lens[:, None]\n"
            "    powered = torch.exp(X - X.amax(dim=-1, keepdim=True))\n"
            "    total = powered.sum(dim=-1, keepdim=True)\n"
            "    return powered.masked_fill(hidden.reshape(shape), 0.0) / total"},
    # BLEU's penalty written the other way round: the score line that follows is right; the penalty's is
    # where the numbers part from the reference's (its own number may be one the reference has elsewhere).
    {"id": "bleu-penalty-inverted", "assignment": "d2l_attention", "module": "seq2seq_attention",
     "old": "score = math.exp(min(0, 1 - len_label / len_pred))",
     "new": "score = math.exp(min(0, len_label / len_pred - 1))"},
    # The prediction's n-gram loop stops one short: the numbers part by another path (a loop run once
    # less), so the correct score line after it is never shown as the mistake.
    {"id": "bleu-prediction-loop-short", "assignment": "d2l_attention", "module": "seq2seq_attention",
     "old": "for i in range(len_pred - n + 1):",
     "new": "for i in range(len_pred - n):"},
    # The output projection made and never applied: the helper's call gives the reference's merged
    # heads, a right value, so the call is never said to be where it goes wrong.
    {"id": "output-projection-unused", "assignment": "d2l_attention", "module": "multihead",
     "old": "        return self.W_o(output_concat)  # (batch_size, num_queries, num_hiddens)",
     "new": "        projected = self.W_o\n        return output_concat"},
    # None-indexing where the reference unsqueezes (the same shapes), then a bare squeeze(): the
    # squeeze makes the shape the reference never makes; the indexing line is right.
    {"id": "none-indexing-then-squeeze-all", "assignment": "d2l_attention", "module": "scoring",
     "old": "        features = queries.unsqueeze(2) + keys.unsqueeze(1)  # (b, num_queries, num_kv_pairs, h)\n"
            "        features = torch.tanh(features)\n"
            "        scores = self.w_v(features).squeeze(-1)  # (b, num_queries, num_kv_pairs)\n",
     "new": "        q = queries[:, :, None, :]\n        k = keys[:, None, :, :]\n"
            "        scores = self.w_v(torch.tanh(q + k)).squeeze()\n"},
    # One masked softmax per query, each given every query's lengths: the slice of one query
    # (queries[:, i:i + 1]) is how such a loop takes its part, not a wrong shape.
    {"id": "per-query-loop-lengths-unsliced", "assignment": "d2l_attention", "module": "scoring",
     "old": "        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)  # (b, num_queries, num_kv_pairs)\n"
            "        self.attention_weights = masked_softmax(scores, valid_lens)\n",
     "new": "        weights = []\n        for i in range(queries.shape[1]):\n"
            "            q_i = queries[:, i:i + 1, :]\n"
            "            s_i = torch.bmm(q_i, keys.transpose(1, 2)) / math.sqrt(d)\n"
            "            weights.append(masked_softmax(s_i, valid_lens))\n"
            "        self.attention_weights = torch.cat(weights, dim=1)\n"},
    # The scores copied, then masked in a loop over the batch that stops one item short: the copy is
    # right; the last item still holds what was copied, and the loop's bound is said.
    {"id": "masking-loop-one-item-short", "assignment": "d2l_attention", "module": "masked_softmax",
     "old": "    shape = X.shape\n    if valid_lens.dim() == 1:\n",
     "new": "    scores = X.clone()\n"
            "    for i in range(scores.shape[0] - 1):\n"
            "        for j in range(scores.shape[1]):\n"
            "            n_valid = valid_lens[i] if valid_lens.dim() == 1 else valid_lens[i, j]\n"
            "            scores[i, j, n_valid:] = -1e6\n"
            "    return nn.functional.softmax(scores, dim=-1)\n"
            "    shape = X.shape\n    if valid_lens.dim() == 1:\n"},
    # A mask built in nested loops whose inner bound leaves out the diagonal: the zeros it started
    # from are still there, on the diagonal alone.
    {"id": "mask-loop-leaves-the-diagonal", "assignment": "ch03", "module": "causal",
     "old": "    return torch.tril(torch.ones(context_length, context_length))\n",
     "new": "    mask = torch.zeros(context_length, context_length)\n    for i in range(context_length):\n"
            "        for j in range(i):\n            mask[i, j] = 1.0\n    return mask\n"},
    # The tensor given, written into in a loop over its rows one short: the last row is as it came.
    {"id": "sequence-mask-loop-one-row-short", "assignment": "d2l_attention", "module": "masked_softmax",
     "old": "    maxlen = X.size(1)\n    mask = (\n",
     "new": "    for r in range(len(valid_len) - 1):\n        X[r, int(valid_len[r]):] = value\n    return X\n"
            "    maxlen = X.size(1)\n    mask = (\n"},
    # The same loop over every row, whose slice stops before the last position: the loop is right,
    # the line that writes is shown without it.
    {"id": "sequence-mask-slice-stops-short", "assignment": "d2l_attention", "module": "masked_softmax",
     "old": "    maxlen = X.size(1)\n    mask = (\n",
     "new": "    for r in range(X.size(0)):\n        X[r, int(valid_len[r]):-1] = value\n    return X\n"
            "    maxlen = X.size(1)\n    mask = (\n"},
    # A softmax by hand that masks the exponentials but divides by the sum of all of them: the
    # scores and the exponentials are another correct way; the division is where it goes wrong.
    {"id": "handwritten-softmax-future-in-denominator", "assignment": "ch03", "module": "causal",
     "old": "        attn_scores = queries @ keys.transpose(1, 2)  # (b, num_tokens, num_tokens)\n"
            "        attn_scores.masked_fill_(\n            self.mask.bool()[:num_tokens, :num_tokens], -torch.inf\n        )\n"
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n",
     "new": "        scaled = torch.bmm(queries, keys.transpose(1, 2)) / self.d_out ** 0.5\n"
            "        allowed = 1.0 - self.mask[:num_tokens, :num_tokens]\n"
            "        exp_scores = torch.exp(scaled - scaled.amax(dim=-1, keepdim=True))\n"
            "        attn_weights = (exp_scores * allowed) / exp_scores.sum(dim=-1, keepdim=True)\n"},
    # The weights masked after softmax: a multiple per row of the masked exponentials too, but made by
    # softmax, so the masked scores softmax should receive are what differs (the masked entries).
    {"id": "weights-masked-after-softmax", "assignment": "ch03", "module": "causal",
     "old": "        attn_scores.masked_fill_(\n            self.mask.bool()[:num_tokens, :num_tokens], -torch.inf\n        )\n"
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n",
     "new": "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
            "        attn_weights = torch.where(self.mask.bool()[:num_tokens, :num_tokens], 0.0, attn_weights)\n"},
    # The keys viewed heads first, then transposed: its numbers match the projection's in order, but
    # not its shape; the view is where it goes wrong, with the permute that would make it right.
    {"id": "keys-viewed-heads-first", "assignment": "ch03", "module": "mha",
     "old": "        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)",
     "new": "        keys = keys.view(b, self.num_heads, num_tokens, self.head_dim).transpose(1, 2)"},
    # A loop over heads, each head's columns taken as they should be, joined along the queries:
    # the slices are one head each, never the wrong shape; the join raises.
    {"id": "head-loop-joined-along-queries", "assignment": "d2l_attention", "module": "multihead",
     "old": "        queries = transpose_qkv(self.W_q(queries), self.num_heads)",
     "new": "        q, k, v = self.W_q(queries), self.W_k(keys), self.W_v(values)\n"
            "        size = q.shape[-1] // self.num_heads\n"
            "        heads = [self.attention(q[:, :, h * size:(h + 1) * size], k[:, :, h * size:(h + 1) * size],\n"
            "                                v[:, :, h * size:(h + 1) * size], valid_lens) for h in range(self.num_heads)]\n"
            "        return self.W_o(torch.cat(heads, dim=1))\n"
            "        queries = transpose_qkv(self.W_q(queries), self.num_heads)"},
    # nn.Dropout's result thrown away: the weights go on undropped; nothing is applied twice.
    {"id": "dropout-result-discarded", "assignment": "ch03", "module": "causal",
     "old": "        attn_weights = self.dropout(attn_weights)\n",
     "new": "        self.dropout(attn_weights)\n"},
    # The mask sized by the first dimension: the public probe that calls mask_and_renormalize records its
    # steps as the hidden one does, so both say where the wrong shape is made.
    {"id": "renormalize-mask-from-first-dim", "assignment": "ch03", "module": "causal",
     "old": "    n = attn_weights.shape[-1]\n", "new": "    n = attn_weights.shape[0]\n"},
    # Heads built with d_out // num_heads: the public check runs the student's own CausalAttention (it
    # passes every check of its own), the hidden grade the reference's; both show the wrapper's line.
    {"id": "wrapper-heads-split-d-out", "assignment": "ch03", "module": "mha",
     "old": "CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)\n",
     "new": "CausalAttention(d_in, d_out // num_heads, context_length, dropout, qkv_bias)\n"},
    # An out-of-place masked_fill on a line of its own, then X returned as it came: the line is said.
    {"id": "sequence-mask-fill-dropped", "assignment": "d2l_attention", "module": "masked_softmax",
     "old": "    X[~mask] = value\n",
     "new": "    keep = mask.reshape(mask.shape + (1,) * (X.dim() - 2))\n    X.masked_fill(~keep, value)\n"},
    # The entries kept named (torch.where(allowed, ...)), the future filled with 0: the kept mask is the
    # complement of the reference's, another correct way; the fill is where it goes wrong.
    {"id": "where-allowed-fill-zero", "assignment": "ch03", "module": "causal",
     "old": "    mask = torch.triu(\n        torch.ones(n, n, dtype=torch.bool, device=attn_scores.device), diagonal=1\n"
            "    )  # (n, n), True above the diagonal\n    masked = attn_scores.masked_fill(mask, -torch.inf)\n",
     "new": "    allowed = simple_causal_mask(n).bool()\n"
            "    masked = torch.where(allowed, attn_scores, torch.zeros_like(attn_scores))\n"},
    # Every frequency squared: both sides check the rotation between positions, which names the frequency.
    {"id": "table-frequency-squared", "assignment": "d2l_attention", "module": "positional_encoding",
     "old": "torch.arange(0, num_hiddens, 2, dtype=torch.float32) / num_hiddens",
     "new": "2 * torch.arange(0, num_hiddens, 2, dtype=torch.float32) / num_hiddens"},
]
SIDES = ("hidden", "public")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return graded_as_students(CASES, tmp_path_factory, "mechanism")


def views(graded, case_id: str) -> dict:
    case = next(c for c in CASES if c["id"] == case_id)
    return {side: unseen.module_view(graded[side][case_id], case["module"]) for side in SIDES}


def diagnosis_of(view: dict) -> dict:
    assert view["score"] < view["max_score"] and not view["grader_errors"], view
    return view["diagnosis"] or {}


@pytest.mark.parametrize("case_id, line, wrong, right", [("init-misspelled", 132, "__init_", "__init__"),
                                                         ("forward-misspelled", 154, "foward", "forward")])
def test_a_misspelled_method_is_named_with_its_line_though_torch_raised(graded, case_id, line, wrong, right):
    for side, view in views(graded, case_id).items():
        diagnosis = diagnosis_of(view)
        notes = " ".join(diagnosis.get("notes") or [])
        assert f"line {line} defines {wrong}, not {right}" in notes, (side, diagnosis)
        assert "not attempted" not in diagnosis.get("error", ""), (side, diagnosis)
        assert all("not attempted" not in t["message"] for t in view["failing"]), (side, view["failing"])


def test_an_error_in_a_correct_constructor_shows_the_calling_line_with_the_wrong_argument(graded):
    for side, view in views(graded, "ex33-d-out-per-head").items():
        diagnosis = diagnosis_of(view)
        assert diagnosis.get("origin_kind") == "call" and diagnosis.get("origin", "").startswith("mha.py, line "), (side, diagnosis)
        assert "MultiHeadAttention(768, 64, 1024, 0.0, num_heads=12)" in diagnosis.get("origin_code", ""), (side, diagnosis)


def test_a_new_state_assigned_and_never_used_is_said_at_its_line(graded):
    for side, view in views(graded, "gru-state-dropped").items():
        notes = " ".join(diagnosis_of(view).get("notes") or [])
        assert "assigns new_state, and nothing in forward reads it afterwards" in notes, (side, view["diagnosis"])
        assert "hidden_state, which this line reads, is never assigned again inside the loop" in notes, side


def test_a_factor_true_of_one_probe_is_never_given_as_a_number(graded):
    for side, view in views(graded, "scaled-by-num-tokens").items():
        relation = diagnosis_of(view).get("relation", "")
        assert "0.5774" not in relation and "constant factor" not in relation, (side, relation)
        assert "√A / √B" in relation and "A = the last dimension of the queries" in relation, (side, relation)
        assert "B = dimension 1 of the queries" in relation, (side, relation)  # the number of tokens


def test_a_helper_that_passes_its_own_checks_is_not_shown_as_the_mistake_its_call_is(graded):
    for side, view in views(graded, "helper-for-rows").items():
        diagnosis = diagnosis_of(view)
        shown = [diagnosis.get("code", ""), diagnosis.get("origin_code", "")]
        assert any("return softmax_naive(all_attention_scores(inputs))" == code for code in shown), (side, diagnosis)
        assert not any("torch.exp(x) / torch.exp(x).sum(dim=0)" in code for code in shown), (side, diagnosis)
        assert "softmax_naive, which passes every check that calls it" in " ".join(diagnosis.get("notes") or []), side


def test_a_renormalisation_by_the_total_is_shown_at_the_sum_not_at_the_division(graded):
    for side, view in views(graded, "renormalize-by-total").items():
        diagnosis = diagnosis_of(view)
        assert diagnosis.get("origin_code", "").startswith("row_sums = masked.sum()"), (side, diagnosis)
        assert "along dimension -1 only" in " ".join(diagnosis.get("notes") or []), (side, diagnosis)


def test_a_sum_over_the_whole_tensor_is_shown_at_its_own_line_with_the_dimension(graded):
    for side, view in views(graded, "sum-of-everything").items():
        diagnosis = diagnosis_of(view)
        assert diagnosis.get("origin_code", "").startswith("total = e.sum()"), (side, diagnosis)
        notes = " ".join(diagnosis.get("notes") or [])
        assert "to one number" in notes and "along dimension -1 only" in notes, (side, diagnosis)
        # Not said to be computed from values the reference combines so: the scalar was judged.
        assert "line 148: total = e.sum()" not in " ".join(diagnosis.get("inputs") or []), (side, diagnosis)


def test_a_missing_keepdim_on_the_line_that_raises_blames_no_earlier_correct_line(graded):
    for side, view in views(graded, "keepdim-on-the-crash-line").items():
        diagnosis = diagnosis_of(view)
        assert "e / e.sum(dim=-1)" in diagnosis.get("code", ""), (side, diagnosis)
        assert "flatten" not in diagnosis.get("origin_code", ""), (side, diagnosis)  # the student's own correct layout
        assert "with keepdim=True" in " ".join(diagnosis.get("notes") or []), (side, diagnosis)


def test_a_reduction_over_another_dimension_than_the_references_says_which_not_keepdim(graded):
    for side, view in views(graded, "softmax-naive-other-dimension").items():
        diagnosis = diagnosis_of(view)
        assert "e / e.sum(-1)" in diagnosis.get("code", ""), (side, diagnosis)
        notes = " ".join(diagnosis.get("notes") or [])
        assert "runs over dimension 0" in notes and "keepdim" not in notes, (side, diagnosis)


def test_exercise_3_2s_call_is_blamed_when_the_wrapper_built_directly_is_right(graded):
    view = views(graded, "ex32-call-passes-other-values")["hidden"]
    diagnosis_of(view)  # points lost, no grader error
    failing = {t["name"]: t for t in view["failing"]}
    check = failing["test_exercise_3_2_other_sizes"]
    assert "not 0.3" in check["message"] and "swapped" not in check["message"], check
    assert check["hint"] == "Pass the dropout argument on to the wrapper.", check


def test_a_result_dropped_before_a_call_to_a_passing_helper_is_said_with_the_call(graded):
    for side, view in views(graded, "masked-softmax-flatten-dropped").items():
        diagnosis = diagnosis_of(view)
        assert "sequence_mask(" in diagnosis.get("origin_code", ""), (side, diagnosis)
        notes = " ".join(diagnosis.get("notes") or [])
        assert "(valid_lens.flatten()) keeps nothing of what it computes" in notes, (side, diagnosis)
        assert "which passes every check that calls it" in notes, (side, diagnosis)


def test_heads_merged_in_another_order_say_so_on_both_sides(graded):
    for side, view in views(graded, "output-permute-heads-last").items():
        diagnosis = diagnosis_of(view)
        assert "columns in another order ([0, " in diagnosis.get("relation", ""), (side, diagnosis)


def test_a_step_made_in_the_students_other_module_shows_the_line_calling_it_on_both_sides(graded):
    shown = {}
    for side, view in views(graded, "dot-product-unscaled").items():
        diagnosis = diagnosis_of(view)
        assert diagnosis.get("code", "").startswith("self.attention_weights = masked_softmax(scores"), (side, diagnosis)
        assert not diagnosis.get("origin"), (side, diagnosis)  # no later line claimed to be computed from right values
        shown[side] = (diagnosis.get("where"), diagnosis.get("stage"))
    assert shown["hidden"] == shown["public"], shown


def test_a_loop_over_heads_one_short_is_shown_at_the_stack_with_the_loop_that_made_too_few(graded):
    for side, view in views(graded, "head-loop-one-short").items():
        diagnosis = diagnosis_of(view)
        assert diagnosis.get("origin_code", "").startswith("output = torch.stack(outputs, dim=1)"), (side, diagnosis)
        notes = " ".join(diagnosis.get("notes") or [])
        assert "(for k in range(self.num_heads - 1):), which made 4 of them where 5 are needed" in notes, (side, notes)
        assert "torch.arange" not in diagnosis.get("origin_code", ""), (side, diagnosis)


def test_a_loop_over_heads_is_another_correct_way_and_the_uncut_mask_is_what_is_shown(graded):
    for side, view in views(graded, "head-loop-mask-uncut").items():
        diagnosis = diagnosis_of(view)
        assert diagnosis.get("code", "").startswith("s = torch.where(self.mask.bool()"), (side, diagnosis)
        assert not diagnosis.get("origin"), (side, diagnosis)  # no per-head step is "the wrong shape made first"
        assert any(made.startswith("self.mask: line") and "register_buffer" in made
                   for made in diagnosis.get("made") or []), (side, diagnosis)


def test_a_softmax_that_masks_the_exponentials_is_not_blamed_for_unmasked_scores(graded):
    for side, view in views(graded, "exp-masked-then-summed-over-columns").items():
        diagnosis = diagnosis_of(view)
        assert diagnosis.get("code", "").startswith("return powered / powered.sum(dim=0"), (side, diagnosis)
        assert "masked" not in diagnosis.get("relation", ""), (side, diagnosis)


def test_a_right_value_changed_before_it_is_returned_is_shown_at_the_line_that_changes_it(graded):
    for side, view in views(graded, "weights-renormalised-on-return").items():
        diagnosis = diagnosis_of(view)
        assert diagnosis.get("code", "").startswith("return weights / weights.sum()"), (side, diagnosis)


def test_a_helper_checked_by_a_probe_that_names_it_is_never_blamed_for_how_it_is_called(graded):
    for side, view in views(graded, "allowed-mask-used-as-hidden").items():
        diagnosis = diagnosis_of(view)
        shown = (diagnosis.get("where", ""), diagnosis.get("origin", ""))
        assert "causal.py, line 54" not in shown, (side, diagnosis)  # return torch.tril(...): right
        assert diagnosis.get("origin_code", "").startswith("masked = torch.where(mask, torch.full_like("), (side, diagnosis)
        assert "line 101 (mask = simple_causal_mask(n).bool()) gives the reference's mask inverted: True exactly " \
               "where the reference's mask is False" in diagnosis.get("notes", []), (side, diagnosis)


def test_one_line_behind_two_catalog_mistakes_is_one_story(graded):
    for side, view in views(graded, "lens-expanded-then-flattened-transposed").items():
        diagnosis = diagnosis_of(view)
        assert not diagnosis.get("concepts"), (side, diagnosis)
        assert diagnosis.get("origin_code", "").startswith("valid_lens = valid_lens.t().flatten()"), (side, diagnosis)


def test_a_matrix_the_copy_never_wrote_is_said_so_on_both_sides(graded):
    for side, view in views(graded, "copy-loop-skips-the-first-name").items():
        said = [(check["message"], check["hint"]) for check in view["failing"]]
        assert said and all("sa_v1.W_query still holds the values it had before the copy" in message
                            and hint.startswith("Copy each of the three matrices") for message, hint in said), (side, said)


def test_helpers_checked_through_a_probe_naming_several_functions_are_never_blamed(graded):
    for side, view in views(graded, "heads-stored-as-head-size").items():
        diagnosis = diagnosis_of(view)
        for shown in ("code", "origin_code"):
            assert not diagnosis.get(shown, "").startswith("X = X."), (side, diagnosis)  # inside transpose_qkv
        assert any(made.startswith("self.num_heads: line") for made in diagnosis.get("made") or []), (side, diagnosis)


def test_a_confirmed_concept_has_no_guessed_line_beside_it(graded):
    for side, view in views(graded, "query-from-first-layer-indexed-loop").items():
        diagnosis = diagnosis_of(view)
        assert any("hidden_state[-1]" in concept for concept in diagnosis.get("concepts") or []), (side, diagnosis)
        assert "no step of yours has this shape" not in diagnosis.get("actual", ""), (side, diagnosis)
        assert not diagnosis.get("code", "").startswith("step = torch.cat"), (side, diagnosis)


def test_a_check_refusing_what_the_code_gives_is_never_said_as_an_error_the_code_raised(graded):
    case = next(c for c in CASES if c["id"] == "weights-property-misspelled")
    texts = {"hidden": unseen.hidden_text(graded["hidden"][case["id"]], case["module"]),
             "public": unseen.public_text(graded["public"][case["id"]], case["module"])}
    assert any("A check cannot use what your code gives:" in text for text in texts.values()), texts
    for side, text in texts.items():
        assert "ProbeError" not in text, (side, text)


def test_a_wrong_shape_made_before_a_call_into_a_reference_is_shown_on_both_sides(graded):
    for side, view in views(graded, "additive-squeeze-every-dimension").items():
        diagnosis = diagnosis_of(view)
        assert "torch.squeeze(self.w_v(features))" in diagnosis.get("origin_code", ""), (side, diagnosis)


def test_the_line_that_sizes_a_wrong_mask_is_shown_on_both_sides(graded):
    for side, view in views(graded, "renormalize-mask-from-first-dim").items():
        diagnosis = diagnosis_of(view)
        assert diagnosis.get("code", "").startswith("masked = attn_weights * mask"), (side, diagnosis)  # raises
        assert diagnosis.get("origin_code", "").startswith("n = attn_weights.shape[0]"), (side, diagnosis)


def test_heads_built_with_the_wrong_width_show_the_wrappers_line_on_both_sides(graded):
    shown = {}
    for side, view in views(graded, "wrapper-heads-split-d-out").items():
        diagnosis = diagnosis_of(view)
        assert diagnosis.get("where", "").startswith("mha.py, line "), (side, diagnosis)
        assert any(made.startswith("self.heads: line") and "d_out // num_heads" in made
                   for made in diagnosis.get("made") or []), (side, diagnosis)
        shown[side] = (diagnosis.get("where"), diagnosis.get("stage"))
    assert shown["hidden"] == shown["public"], shown


def test_the_expected_value_computed_and_dropped_is_said_at_its_line_on_both_sides(graded):
    for side, view in views(graded, "sequence-mask-fill-dropped").items():
        notes = " ".join(diagnosis_of(view).get("notes") or [])
        assert ("(X.masked_fill(~keep, value)) computes exactly the expected value, and nothing of yours uses its "
                "result: yours is the tensor the call gave, unchanged") in notes, (side, view["diagnosis"])


def test_a_mask_of_the_entries_kept_is_not_blamed_for_the_fill(graded):
    for side, view in views(graded, "where-allowed-fill-zero").items():
        diagnosis = diagnosis_of(view)
        assert diagnosis.get("origin_code", "").startswith("masked = torch.where(allowed"), (side, diagnosis)
        assert diagnosis.get("origin_kind") == "uses", (side, diagnosis)  # never "the tensors it is computed from match"
        assert not any("passes every check" in note for note in diagnosis.get("notes") or []), (side, diagnosis)
        assert any(note.endswith("gives the reference's mask inverted: True exactly where the reference's mask is False")
                   for note in diagnosis.get("notes") or []), (side, diagnosis)


def test_a_wrong_frequency_is_named_by_the_rotation_check_on_both_sides(graded):
    for side, view in views(graded, "table-frequency-squared").items():
        diagnosis_of(view)
        hints = [check["hint"] for check in view["failing"] if check["name"] == "test_relative_positions_are_rotations"]
        assert hints and hints[0].startswith("P[i + delta] is a fixed map of P[i], but not the rotation"), (side, view["failing"])


def test_a_statement_that_keeps_nothing_of_a_new_tensor_is_found_only_for_what_the_call_passes(tmp_path):
    from grader.diagnosis.mechanism import dropped_results

    path = tmp_path / "mine.py"
    path.write_text("def f(x, lens):\n"
                    "    lens.reshape(-1)\n"
                    "    x.t()\n"
                    "    lens = lens + 0\n"
                    "    return g(x, lens)\n")
    notes = dropped_results(path, 5)
    assert len(notes) == 2 and notes[0].startswith("line 2 (lens.reshape(-1)) keeps nothing") and "line 3" in notes[1]
    path.write_text("def f(x, lens):\n    y = x\n    lens.reshape(-1)\n    return g(y)\n")
    assert dropped_results(path, 4) == []  # lens is not what the call passes
    # An argument nested too deep to write back (a student's file): the line as written, never an error.
    path.write_text("def f(x, lens):\n    lens.reshape(" + "x + " * 600 + "x)\n    return g(x, lens)\n")
    notes = dropped_results(path, 3)
    assert len(notes) == 1 and notes[0].startswith("line 2 (lens.reshape(x + x + ")


def test_a_result_transposed_as_a_whole_is_shown_as_its_line_leaves_it(graded):
    for side, view in views(graded, "v1-product-transposed-whole").items():
        diagnosis = diagnosis_of(view)
        assert "transposes its result as a whole (.mT)" in " ".join(diagnosis.get("notes") or []), (side, diagnosis)
        assert diagnosis.get("actual", "").startswith("shape (") and diagnosis["actual"].split(":")[0] == \
            diagnosis.get("expected", "").split(":")[0], (side, diagnosis)  # the shape the line leaves: the expected one


def test_what_a_call_gives_a_passing_helper_is_shown_and_the_helpers_lines_are_not(graded):
    for side, view in views(graded, "multihead-twice-the-heads").items():
        diagnosis = diagnosis_of(view)
        assert any("self.num_heads = 2 * num_heads" in line for line in diagnosis.get("made") or []), (side, diagnosis)
        assert not any("X.reshape(X.shape[0], X.shape[1], num_heads, -1)" in line
                       for line in diagnosis.get("inputs") or []), (side, diagnosis)
        assert "which passes every check that calls it" in " ".join(diagnosis.get("notes") or []), (side, diagnosis)


def test_a_wrong_shape_sized_by_one_number_starts_at_that_numbers_line(graded):
    for side, view in views(graded, "sequence-mask-length-of-rows").items():
        diagnosis = diagnosis_of(view)
        assert diagnosis.get("origin_code", "").startswith("maxlen = X.shape[0]"), (side, diagnosis)
        assert "(the number maxlen, which sizes the step" in diagnosis.get("origin", ""), (side, diagnosis)


def test_rows_of_a_loop_over_a_tensor_in_another_order_say_the_order(graded):
    for side, view in views(graded, "decoder-loop-batch-first").items():
        diagnosis = diagnosis_of(view)
        notes = " ".join(diagnosis.get("notes") or [])
        assert "takes the rows of a value of shape (4, 7, 8) (embedding, made at line" in notes, (side, diagnosis)
        assert "the reference permutes it into shape (7, 4, 8), whose rows have shape (4, 8)" in notes, (side, diagnosis)


def test_heads_computed_one_at_a_time_are_compared_one_part_at_a_time(graded):
    for side, view in views(graded, "mha-heads-in-a-loop-scaled-by-d-out").items():
        diagnosis = diagnosis_of(view)
        assert "one part at a time" in diagnosis.get("stage", ""), (side, diagnosis)
        assert "self.d_out ** 0.5" in diagnosis.get("origin_code", ""), (side, diagnosis)  # the line before the softmax's
        assert "queries[:, h] @ keys" not in diagnosis.get("code", "") + diagnosis.get("origin_code", ""), (side, diagnosis)


def test_an_attribute_kept_under_a_near_name_is_said_with_both_lines(graded):
    for side, view in views(graded, "decoder-weights-kept-under-another-name").items():
        notes = " ".join(diagnosis_of(view).get("notes") or [])
        assert "line 173 assigns self._attention_weight in forward, and nothing outside forward reads it" in notes, (side, notes)
        assert "attention_weights reads self._attention_weights (line 189)" in notes, (side, notes)


def test_heads_interleaved_in_the_batch_are_compared_one_head_at_a_time(graded):
    for side, view in views(graded, "multihead-loop-keys-as-values").items():
        diagnosis = diagnosis_of(view)
        assert diagnosis.get("stage", "").startswith("context vectors (attention weights times values), its part [0::"), \
            (side, diagnosis)
        assert "keys[k::h], keys[k::h]" in diagnosis.get("code", "") + diagnosis.get("origin_code", ""), (side, diagnosis)


def test_a_head_that_no_step_computes_is_named_as_missing(graded):
    for side, view in views(graded, "multihead-loop-one-head-short").items():
        diagnosis = diagnosis_of(view)
        assert "its part [0::" in diagnosis.get("stage", "") and "each right, and never this one" in diagnosis["stage"], \
            (side, diagnosis)
        assert diagnosis.get("actual") == "no step of yours computes this part", (side, diagnosis)
        assert "output[k::h] = self.attention(" in diagnosis.get("code", ""), (side, diagnosis)
        assert not diagnosis.get("origin"), (side, diagnosis)


def test_a_parameter_holding_another_s_values_is_said(graded):
    for side, view in views(graded, "v1-value-made-before-key").items():
        notes = " ".join(diagnosis_of(view).get("notes") or [])
        assert "gives what the reference's x @ W_value gives, on the same inputs and seed: your W_key holds the values " \
               "the reference's W_value holds" in notes, (side, notes)


def test_a_batch_loop_one_short_shows_the_join_and_the_loop_not_a_missing_part(graded):
    for side, view in views(graded, "causal-batch-loop-one-short").items():
        diagnosis = diagnosis_of(view)
        notes = " ".join(diagnosis.get("notes") or [])
        assert "the pieces are made in the loop at line" in notes and "for i in range(b - 1):" in notes, (side, diagnosis)
        assert "never this one" not in diagnosis.get("stage", ""), (side, diagnosis)


def test_a_wrong_shape_computed_from_the_inputs_is_not_moved_to_its_scales_line(graded):
    for side, view in views(graded, "dot-einsum-keys-first").items():
        diagnosis = diagnosis_of(view)
        assert "einsum" in diagnosis.get("origin_code", "") + diagnosis.get("code", ""), (side, diagnosis)
        assert "the number d" not in diagnosis.get("origin", ""), (side, diagnosis)


def test_the_references_reduction_of_the_same_value_is_found_by_shape():
    import torch

    from grader.diagnosis.reductions import reduced_otherwise, reference_reduction
    from grader.sandbox.protocol import ShapeStep, Step

    where = ["mine.py", 3, 0]
    mine = {0: ShapeStep("exp", [4, 3], where, []), 1: ShapeStep("sum", [4], where, [0])}
    over_0 = [Step("exp", torch.ones(4, 3), where, []), Step("sum", torch.ones(3), where, [0])]
    assert reference_reduction(mine, 1, over_0) == (0, (3,)) and reduced_otherwise(mine, 1, over_0)
    kept = [Step("exp", torch.ones(4, 3), where, []), Step("sum", torch.ones(4, 1), where, [0])]
    assert reference_reduction(mine, 1, kept) is None and not reduced_otherwise(mine, 1, kept)  # keepdim is the fix
    other_value = [Step("exp", torch.ones(3, 4), where, []), Step("sum", torch.ones(4), where, [0])]
    assert reference_reduction(mine, 1, other_value) is None and not reduced_otherwise(mine, 1, other_value)
    square = {0: ShapeStep("exp", [3, 3], where, []), 1: ShapeStep("sum", [3], where, [0])}
    same_size = [Step("exp", torch.ones(3, 3), where, []), Step("sum", torch.ones(3), where, [0])]
    assert reference_reduction(square, 1, same_size) is None  # the same shape: which dimension, not told


def test_a_dropped_dimension_is_found_from_the_shapes_alone():
    from grader.diagnosis.reductions import dropped_dimension
    from grader.sandbox.protocol import ShapeStep

    where = ["mine.py", 3, 0]
    steps = {0: ShapeStep("exp", [2, 3, 5], where, []), 1: ShapeStep("sum", [2, 3], where, [0])}
    assert dropped_dimension(steps, [0, 1]) == (1, -1, (2, 3, 1), (2, 3, 5))  # dim=-1 dropped: (2, 3, 1) fits
    square = {0: ShapeStep("exp", [2, 4, 4], where, []), 1: ShapeStep("sum", [2, 4], where, [0])}
    assert dropped_dimension(square, [0, 1]) == (1, None, None, (2, 4, 4))  # dims 1 and 2 alike: not said which
    fits = {0: ShapeStep("exp", [4, 4], where, []), 1: ShapeStep("sum", [4], where, [0])}
    assert dropped_dimension(fits, [0, 1]) is None  # (4, 4) and (4,) broadcast: not this error


@pytest.mark.parametrize("case_id, concept, code", [
    ("bleu-over-label-length", "not by the label's length", "precision = num_matches / len_label"),
    ("bleu-uniform-weights", "1/2 for unigrams, 1/4 for bigrams", "score *= (num_matches / (len_pred - n + 1)) ** (1 / k)"),
])
def test_a_bleu_mistake_is_named_and_shown_at_the_line_that_first_makes_its_number(graded, case_id, concept, code):
    for side, view in views(graded, case_id).items():
        diagnosis = diagnosis_of(view)
        assert any(concept in c for c in diagnosis.get("concepts") or []), (side, diagnosis)
        shown = [diagnosis.get("code", ""), *(line.split(": ", 2)[-1] for line in diagnosis.get("made") or [])]
        assert any(line.startswith(code) for line in shown), (side, diagnosis)


def test_a_loop_that_stops_one_row_short_is_named_with_its_line_and_the_zeros_are_not_blamed(graded):
    for side, view in views(graded, "loop-bound-off-by-one").items():
        diagnosis = diagnosis_of(view)
        assert "torch.zeros" not in diagnosis.get("origin_code", ""), (side, diagnosis)
        notes = " ".join(diagnosis.get("notes") or [])
        assert "Rows [5] of yours still hold the value line 166 filled the tensor with" in notes, (side, diagnosis)
        assert "the loop at line 167 (for i in range(inputs.shape[0] - 1):)" in notes, (side, diagnosis)


def test_a_factory_of_one_line_with_a_wrong_argument_shows_that_line(graded):
    for side, view in views(graded, "ex33-d-out-halved").items():
        diagnosis = diagnosis_of(view)
        assert diagnosis.get("code") == "return MultiHeadAttention(768, 384, 1024, 0.0, num_heads=12)", (side, diagnosis)


def test_a_loop_that_makes_one_piece_too_few_is_shown_at_the_join_with_the_loop(graded):
    for side, view in views(graded, "rows-loop-one-short").items():
        diagnosis = diagnosis_of(view)
        assert diagnosis.get("origin_code") == "context_vec = torch.cat(rows, dim=1)", (side, diagnosis)
        assert "attn_weights[:, t:t + 1] @ values" not in diagnosis.get("code", ""), (side, diagnosis)  # correct per row
        notes = " ".join(diagnosis.get("notes") or [])
        assert "joins" in notes and "along dimension 1" in notes, (side, diagnosis)
        assert "the pieces are made in the loop at line 183 (rows = [attn_weights[:, t:t + 1] @ values for t in " \
               "range(num_tokens - 1)])" in notes, (side, diagnosis)


def test_pieces_joined_along_another_axis_than_the_references_are_said_so(graded):
    for side, view in views(graded, "heads-joined-on-tokens").items():
        diagnosis = diagnosis_of(view)
        assert "torch.cat([head(x) for head in self.heads], dim=1)" in diagnosis.get("origin_code", ""), (side, diagnosis)
        notes = " ".join(diagnosis.get("notes") or [])
        assert "along dimension 1" in notes and "the reference joins 2 pieces of this shape along dimension 2" in notes, \
            (side, diagnosis)


def test_parts_of_a_reference_value_are_not_blamed_their_join_is(graded):
    for side, view in views(graded, "heads-taken-one-by-one").items():
        diagnosis = diagnosis_of(view)
        shown = [diagnosis.get("code", ""), diagnosis.get("origin_code", ""), *(diagnosis.get("inputs") or [])]
        assert any(code.startswith("return torch.cat(heads, dim=0)") for code in shown), (side, diagnosis)
        assert not any("X.narrow(" in code for code in shown), (side, diagnosis)


def test_a_reshape_where_a_permute_is_meant_is_shown_with_the_order_that_holds(graded):
    for side, view in views(graded, "reshape-for-permute").items():
        diagnosis = diagnosis_of(view)
        shown = [diagnosis.get("code", ""), diagnosis.get("origin_code", "")]
        assert any(code.startswith("X = X.reshape(X.shape[0], X.shape[2], X.shape[1], X.shape[3])") for code in shown), \
            (side, diagnosis)
        notes = " ".join(diagnosis.get("notes") or [])
        assert "reshape never moves an entry to another dimension" in notes and ".permute(0, 2, 1, 3)" in notes, \
            (side, diagnosis)


def test_a_new_state_dropped_on_purpose_is_said_and_the_loops_correct_lines_are_not_blamed(graded):
    for side, view in views(graded, "gru-state-discarded").items():
        diagnosis = diagnosis_of(view)
        notes = " ".join(diagnosis.get("notes") or [])
        assert "line 178 drops one of the values its call returns (assigned to _h)" in notes, (side, diagnosis)
        assert "hidden_state, which this line reads, is never assigned again inside the loop" in notes, (side, diagnosis)
        shown = [diagnosis.get("origin_code", ""), *(diagnosis.get("inputs") or [])]
        assert not any("torch.cat((context" in code or "self.attention(query" in code for code in shown), (side, diagnosis)


def test_a_misspelled_attribute_a_check_reads_is_named_with_its_line(graded):
    for side, view in views(graded, "weights-misspelled").items():
        notes = " ".join(diagnosis_of(view).get("notes") or [])
        assert "line 114 defines attention_weigths, not attention_weights: class AdditiveAttention has no " \
               "attention_weights" in notes, (side, view["diagnosis"])
        assert "class DotProductAttention" not in notes, (side, notes)


def test_a_bleu_mistake_no_catalog_knows_is_shown_at_its_first_number_no_reference_has(graded):
    for side, view in views(graded, "bleu-prediction-in-characters").items():
        diagnosis = diagnosis_of(view)
        assert not diagnosis.get("concepts"), (side, diagnosis)  # else this test no longer tests that
        assert diagnosis.get("code", "").startswith("len_pred, len_label = len(pred_seq), len(label_tokens)"), \
            (side, diagnosis)
        assert "line 219 assigns len_pred = " in " ".join(diagnosis.get("notes") or []), (side, diagnosis)


def test_a_buffer_built_wrong_in_init_is_shown_with_the_line_that_makes_it(graded):
    for side, view in views(graded, "mask-hides-the-past").items():
        made = " ".join(diagnosis_of(view).get("made") or [])
        assert made.startswith("self.mask: line ") and "torch.ones(context_length, context_length).tril(diagonal=-1)" in made, \
            (side, view["diagnosis"])


def test_a_copy_into_v2_is_said_on_both_sides_and_first_in_the_hidden_grade(graded):
    for side, view in views(graded, "copy-into-v2").items():
        assert view["score"] < view["max_score"], side
        said = [t for t in view["failing"] if t["message"].endswith("the copy changed sa_v2.W_key.weight")]
        assert said and "the copy goes from sa_v2 into sa_v1" in said[0]["hint"], (side, view["failing"])
        if side == "hidden":  # every hidden check of the copy says it before what sa_v1 then holds
            assert said == view["failing"], view["failing"]


def test_a_factor_in_the_sizes_is_said_on_both_sides_though_one_check_has_a_single_token(graded):
    for side, view in views(graded, "v2-scaled-by-num-tokens").items():
        relation = diagnosis_of(view).get("relation", "")
        assert "√A / √B" in relation and "A = the last dimension of the queries" in relation, (side, relation)


def test_the_right_values_in_another_shape_are_said_so_on_both_sides(graded):
    for side, view in views(graded, "result-flattened").items():
        relation = diagnosis_of(view).get("relation", "")
        assert relation.startswith("yours holds the expected values in the same order, in shape (4, 4) instead of "
                                   "(2, 2, 4)"), (side, view["diagnosis"])


def test_a_right_join_of_pieces_of_the_wrong_width_is_not_blamed(graded):
    for side, view in views(graded, "wrapper-pieces-too-wide").items():
        diagnosis = diagnosis_of(view)
        assert "torch.cat(" not in diagnosis.get("origin_code", ""), (side, diagnosis)
        assert not any("such pieces" in note for note in diagnosis.get("notes") or []), (side, diagnosis)
        # The factory's one line that builds the wrapper with another d_out, on both sides.
        assert diagnosis.get("code", "").startswith("return MultiHeadAttentionWrapper(d_in, 2,"), (side, diagnosis)


def test_a_step_of_another_correct_softmax_is_never_blamed_the_line_that_departs_is(graded):
    for side, view in views(graded, "handwritten-denominator-unmasked").items():
        diagnosis = diagnosis_of(view)
        shown = [diagnosis.get("code", ""), diagnosis.get("origin_code", ""), *(diagnosis.get("inputs") or [])]
        assert not any("torch.exp(" in code for code in shown), (side, diagnosis)
        assert diagnosis.get("origin_code", "").startswith("total = powered.sum(dim=-1, keepdim=True)"), (side, diagnosis)


@pytest.mark.parametrize("case_id, line", [("bleu-penalty-inverted", "score = math.exp(min(0, len_label / len_pred - 1))"),
                                           ("bleu-prediction-loop-short", None)])
def test_a_bleu_line_is_shown_only_where_what_it_reads_agrees_and_its_own_number_differs(graded, case_id, line):
    for side, view in views(graded, case_id).items():
        diagnosis = diagnosis_of(view)
        shown = [diagnosis.get("code", ""), diagnosis.get("origin_code", "")]
        assert not any(code.startswith("score *= math.pow(") for code in shown), (side, diagnosis)
        if line is not None:
            assert diagnosis.get("code", "").startswith(line), (side, diagnosis)


def test_a_call_that_gives_a_value_the_reference_computes_is_never_said_to_be_where_it_goes_wrong(graded):
    for side, view in views(graded, "output-projection-unused").items():
        diagnosis = diagnosis_of(view)
        assert "is where it goes wrong" not in " ".join(diagnosis.get("notes") or []), (side, diagnosis)
        assert "this step is missing" in diagnosis.get("relation", ""), (side, diagnosis)


def test_an_operation_applied_twice_is_said_with_the_line_that_already_applied_it(graded):
    for side, view in views(graded, "v1-scaled-twice").items():
        notes = " ".join(diagnosis_of(view).get("notes") or [])
        assert "applies the division twice, the reference once" in notes, (side, notes)
        assert "attn_scores = queries @ keys.T" in notes, (side, notes)


def test_a_scale_applied_once_is_never_said_to_be_applied_twice(graded):
    for side, view in views(graded, "mha-scaled-by-d-out").items():
        assert "twice" not in " ".join(diagnosis_of(view).get("notes") or []), (side, view["diagnosis"])


def test_a_value_a_loop_reads_row_by_row_is_never_called_unused(graded):
    for side, view in views(graded, "context-loop-over-scores").items():
        diagnosis = diagnosis_of(view)
        assert "nothing of yours uses its result" not in " ".join(diagnosis.get("notes") or []), (side, diagnosis)
        assert "all_attention_scores(inputs)" in diagnosis.get("code", ""), (side, diagnosis)


def test_the_attribute_a_line_assigns_is_not_shown_as_what_it_uses(graded):
    for side, view in views(graded, "additive-squeeze-all").items():
        made = diagnosis_of(view).get("made") or []
        assert not any(line.startswith("self.attention_weights:") for line in made), (side, made)


def test_a_slice_taken_by_none_indexing_is_no_wrong_shape_and_the_squeeze_is_shown(graded):
    for side, view in views(graded, "none-indexing-then-squeeze-all").items():
        diagnosis = diagnosis_of(view)
        assert diagnosis.get("origin_code", "").startswith("scores = self.w_v(torch.tanh(q + k)).squeeze()"), (side, diagnosis)
        assert "(2, 10)" in diagnosis.get("origin", ""), (side, diagnosis)


def test_one_query_at_a_time_is_another_way_and_its_slice_is_never_blamed(graded):
    for side, view in views(graded, "per-query-loop-lengths-unsliced").items():
        diagnosis = diagnosis_of(view)
        shown = [diagnosis.get("code", ""), diagnosis.get("origin_code", "")]
        assert not any(line.startswith("q_i = queries[:, i:i + 1, :]") for line in shown), (side, diagnosis)
        assert any("masked_softmax(s_i, valid_lens)" in line for line in shown), (side, diagnosis)


def test_a_copy_masked_in_a_loop_one_item_short_names_the_loop_not_the_copy(graded):
    for side, view in views(graded, "masking-loop-one-item-short").items():
        diagnosis = diagnosis_of(view)
        assert not diagnosis.get("origin_code", "").startswith("scores = X.clone()"), (side, diagnosis)
        notes = " ".join(diagnosis.get("notes") or [])
        assert ("The entries at index [1] of dimension 0 of yours still hold what line 92 copied into the tensor "
                "(scores = X.clone())") in notes, (side, diagnosis)
        assert "the loop at line 93 (for i in range(scores.shape[0] - 1):)" in notes, (side, diagnosis)


def test_a_dropout_result_thrown_away_is_said_and_nothing_is_applied_twice(graded):
    view = views(graded, "dropout-result-discarded")["hidden"]
    diagnosis = diagnosis_of(view)
    assert "twice" not in diagnosis.get("relation", ""), diagnosis
    assert any(note.startswith("line 182 (self.dropout(attn_weights)) computes a value and nothing of yours uses")
               for note in diagnosis.get("notes") or []), diagnosis


def test_entries_a_loop_never_writes_are_said_with_what_they_still_hold(graded):
    for side, view in views(graded, "mask-loop-leaves-the-diagonal").items():
        notes = " ".join(diagnosis_of(view).get("notes") or [])
        assert ("The diagonal entries of yours still hold the value line 54 filled the tensor with "
                "(mask = torch.zeros(context_length, context_length))") in notes, (side, notes)
        assert "the loop at line 56 (for j in range(i):) writes into it at line 57" in notes, (side, notes)
    for side, view in views(graded, "sequence-mask-loop-one-row-short").items():
        notes = " ".join(diagnosis_of(view).get("notes") or [])
        assert "of yours still hold the values your code was given there" in notes, (side, notes)
        assert "the loop at line 58 (for r in range(len(valid_len) - 1):) writes into it at line 59" in notes, (side, notes)


def test_entries_a_slice_leaves_out_are_said_at_the_line_that_writes_not_at_its_loop(graded):
    for side, view in views(graded, "sequence-mask-slice-stops-short").items():
        notes = " ".join(diagnosis_of(view).get("notes") or [])
        assert "line 59 (X[r, int(valid_len[r]):-1] = value) writes into it and never into them" in notes, (side, notes)
        assert "the loop at line" not in notes, (side, notes)


def test_a_softmax_by_hand_dividing_by_every_exponential_is_shown_at_the_division(graded):
    for side, view in views(graded, "handwritten-softmax-future-in-denominator").items():
        diagnosis = diagnosis_of(view)
        shown = [diagnosis.get("code", ""), diagnosis.get("origin_code", "")]
        assert any(line.startswith("attn_weights = (exp_scores * allowed) / exp_scores.sum(") for line in shown), (side, diagnosis)
        assert not any(line.startswith(("scaled = ", "allowed = ", "exp_scores = ")) for line in shown), (side, diagnosis)


def test_one_heads_columns_are_no_wrong_shape_and_the_join_is_shown(graded):
    for side, view in views(graded, "head-loop-joined-along-queries").items():
        diagnosis = diagnosis_of(view)
        assert diagnosis.get("code", "").startswith("return self.W_o(torch.cat(heads, dim=1))"), (side, diagnosis)
        assert "heads = [self.attention(" not in diagnosis.get("origin_code", ""), (side, diagnosis)


def test_weights_masked_after_softmax_are_no_softmax_by_hand(graded):
    for side, view in views(graded, "weights-masked-after-softmax").items():
        diagnosis = diagnosis_of(view)
        assert diagnosis.get("stage", "").startswith("scaled and masked scores"), (side, diagnosis)
        assert "except where the reference's entries are masked" in diagnosis.get("relation", ""), (side, diagnosis)


def test_a_value_matching_a_stage_only_in_order_is_not_proven_right(graded):
    for side, view in views(graded, "keys-viewed-heads-first").items():
        diagnosis = diagnosis_of(view)
        assert diagnosis.get("origin_code", "").startswith("keys = keys.view(b, self.num_heads, num_tokens"), (side, diagnosis)
        assert any("with its dimensions reordered: .permute(0, 2, 1, 3)" in note for note in diagnosis.get("notes") or []), \
            (side, diagnosis)
