"""Mistakes written as students write them (other styles than the catalog's), and correct code
in unusual styles. The project's own catalog, kept apart from ``tests/<a>/catalog/``.

``MISTAKES``: ``(assignment, stem, description, old, new, concept)``: a text replacement on
the solution and the concept it must get; ``NONE`` means no concept may be named (the
diagnosis must localize or explain instead). ``CORRECT``: ``(assignment, stem, description,
old, new)``, code that must keep full marks.
"""

from pathlib import Path

from grader import catalog

NONE = ""
ROOT = Path(__file__).resolve().parent.parent


def concept(assignment: str, stem: str, description: str) -> str:
    """The concept of the catalog's mistake ``description`` (so the texts are never copied)."""
    for mistake in catalog.load(ROOT / "tests" / assignment):
        if mistake.stem == stem and mistake.description == description:
            return mistake.concept
    raise KeyError(description)


def ch03(stem, description):
    return concept("ch03", stem, description)


def d2l(stem, description):
    return concept("d2l_attention", stem, description)


VIEW = "Call .contiguous() before .view(...) after a transpose (or use .reshape(...), which copies when needed)."
DOT_T = ("On a batch of matrices, .T reverses all dimensions (it is meant for 2-D tensors): "
         "transpose only the last two with .transpose(-2, -1).")
SOFTMAX_V1 = "torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)"
SCORES_D2L = "scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)"

MISTAKES = [
    # -- ch03: simple_attention ------------------------------------------------------------------------
    ("ch03", "simple_attention", "functional softmax over dim 0, positional argument",
     "    return torch.softmax(all_attention_scores(inputs), dim=-1)\n",
     "    scores = all_attention_scores(inputs)\n    return torch.nn.functional.softmax(scores, 0)\n",
     ch03("simple_attention", "softmax over dim 0")),
    ("ch03", "simple_attention", "scores as sums of a loop over tokens",
     "    return inputs @ query\n", "    return torch.stack([(x + query).sum() for x in inputs])\n", NONE),
    ("ch03", "simple_attention", "context vector broadcasts the weights over the wrong axis",
     "    return attn_weights @ inputs\n", "    return (inputs * attn_weights).sum(dim=0)\n", NONE),
    ("ch03", "simple_attention", "feature scores written with matmul and transpose",
     "    return inputs @ inputs.T\n", "    return torch.matmul(inputs.transpose(0, 1), inputs)\n",
     ch03("simple_attention", "scores of the features, not the tokens")),
    ("ch03", "simple_attention", "softmax normalised over every entry, method style",
     "    return torch.exp(x) / torch.exp(x).sum(dim=0)\n", "    return x.exp() / x.exp().sum()\n",
     ch03("simple_attention", "softmax summed over every entry")),
    ("ch03", "simple_attention", "normalised by torch.max",
     "    return scores / scores.sum()\n", "    return scores / torch.max(scores)\n",
     ch03("simple_attention", "divide by the largest score")),
    ("ch03", "simple_attention", "naive softmax summed over the last dimension",
     "    return torch.exp(x) / torch.exp(x).sum(dim=0)\n",
     "    return torch.exp(x) / torch.exp(x).sum(dim=-1, keepdim=True)\n", NONE),
    # -- ch03: self_attention_v1 -----------------------------------------------------------------------
    ("ch03", "self_attention_v1", "no scaling, Tensor.softmax", SOFTMAX_V1, "attn_scores.softmax(dim=-1)",
     ch03("self_attention_v1", "scores not scaled by sqrt(d_k)")),
    ("ch03", "self_attention_v1", "scaled by d_k instead of its square root", SOFTMAX_V1,
     "torch.softmax(attn_scores / keys.shape[-1], dim=-1)", NONE),
    ("ch03", "self_attention_v1", "d_k taken from the number of tokens", SOFTMAX_V1,
     "torch.softmax(attn_scores / keys.shape[0] ** 0.5, dim=-1)", NONE),
    ("ch03", "self_attention_v1", "softmax over dim=-2", SOFTMAX_V1,
     "torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-2)", ch03("self_attention_v1", "softmax over dim 0")),
    ("ch03", "self_attention_v1", "parameters created value, query, key",
     "        self.W_query = nn.Parameter(torch.rand(d_in, d_out))\n        self.W_key = nn.Parameter(torch.rand(d_in, d_out))\n"
     "        self.W_value = nn.Parameter(torch.rand(d_in, d_out))\n",
     "        self.W_value = nn.Parameter(torch.rand(d_in, d_out))\n        self.W_query = nn.Parameter(torch.rand(d_in, d_out))\n"
     "        self.W_key = nn.Parameter(torch.rand(d_in, d_out))\n", NONE),
    ("ch03", "self_attention_v1", "W_query drawn with torch.randn",
     "self.W_query = nn.Parameter(torch.rand(d_in, d_out))", "self.W_query = nn.Parameter(torch.randn(d_in, d_out))", NONE),
    # -- ch03: self_attention_v2 -----------------------------------------------------------------------
    ("ch03", "self_attention_v2", "no scaling, functional softmax", SOFTMAX_V1,
     "torch.nn.functional.softmax(attn_scores, dim=-1)", ch03("self_attention_v2", "scores not scaled by sqrt(d_k)")),
    ("ch03", "self_attention_v2", "keys times queries with torch.matmul",
     "attn_scores = queries @ keys.T", "attn_scores = torch.matmul(keys, queries.T)",
     ch03("self_attention_v2", "keys and queries swapped")),
    ("ch03", "self_attention_v2", "functional softmax over dim 0", SOFTMAX_V1,
     "torch.nn.functional.softmax(attn_scores / keys.shape[-1] ** 0.5, 0)", ch03("self_attention_v2", "softmax over dim 0")),
    ("ch03", "self_attention_v2", "every layer with a bias",
     "        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
     "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n",
     "        self.W_query = nn.Linear(d_in, d_out)\n        self.W_key = nn.Linear(d_in, d_out)\n"
     "        self.W_value = nn.Linear(d_in, d_out)\n", NONE),
    ("ch03", "self_attention_v2", "values from the key layer", "values = self.W_value(x)", "values = self.W_key(x)", NONE),
    # -- ch03: weight_transfer ---------------------------------------------------------------------------
    ("ch03", "weight_transfer", "copy_ without transposing",
     "    sa_v1.W_query.data = sa_v2.W_query.weight.T  # (d_in, d_out)\n",
     "    sa_v1.W_query.data.copy_(sa_v2.W_query.weight)\n", NONE),
    ("ch03", "weight_transfer", "a loop that forgets W_value",
     "    sa_v1.W_query.data = sa_v2.W_query.weight.T  # (d_in, d_out)\n    sa_v1.W_key.data = sa_v2.W_key.weight.T  # (d_in, d_out)\n"
     "    sa_v1.W_value.data = sa_v2.W_value.weight.T  # (d_in, d_out)\n",
     "    for name in ('W_query', 'W_key'):\n        getattr(sa_v1, name).data = getattr(sa_v2, name).weight.T\n",
     ch03("weight_transfer", "W_value not copied")),
    # -- ch03: causal ------------------------------------------------------------------------------------
    ("ch03", "causal", "causal_attention_weights without scaling, functional softmax",
     "    return torch.softmax(masked / d_k**0.5, dim=-1)\n", "    return torch.nn.functional.softmax(masked, dim=-1)\n",
     ch03("causal", "causal_attention_weights without the sqrt(d_k) scaling")),
    ("ch03", "causal", "future zeroed by multiplying with the inverted mask",
     "    masked = attn_scores.masked_fill(mask, -torch.inf)\n", "    masked = attn_scores * ~mask\n",
     ch03("causal", "causal_attention_weights fills the future with 0 instead of -inf")),
    ("ch03", "causal", "CausalAttention masks with a full-size float mask (not sliced)",
     "            self.mask.bool()[:num_tokens, :num_tokens], -torch.inf\n", "            self.mask == 1, -torch.inf\n",
     ch03("causal", "CausalAttention does not slice the mask to the number of tokens")),
    ("ch03", "causal", "CausalAttention: d_k taken from the number of tokens",
     "torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)", "torch.softmax(attn_scores / num_tokens ** 0.5, dim=-1)",
     NONE),
    ("ch03", "causal", "CausalAttention masks with 0, written as a float",
     "            self.mask.bool()[:num_tokens, :num_tokens], -torch.inf\n",
     "            self.mask.bool()[:num_tokens, :num_tokens], float(0)\n",
     ch03("causal", "CausalAttention fills the future with 0 instead of -inf")),
    ("ch03", "causal", "CausalAttention applies dropout to the scores, before softmax",
     "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n        attn_weights = self.dropout(attn_weights)\n",
     "        attn_scores = self.dropout(attn_scores)\n        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n",
     NONE),
    ("ch03", "causal", "CausalAttention transposes the keys with .T",
     "attn_scores = queries @ keys.transpose(1, 2)", "attn_scores = queries @ keys.T", DOT_T),
    ("ch03", "causal", "CausalAttention softmax over dim 1 of the batch",
     "torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)", "torch.softmax(attn_scores / keys.shape[-1] ** 0.5, 1)",
     ch03("causal", "CausalAttention softmax over the wrong dimension")),
    ("ch03", "causal", "CausalAttention mask with triu() of ones (diagonal included)",
     '"mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)',
     '"mask", torch.ones(context_length, context_length).triu()',
     ch03("causal", "CausalAttention masks the diagonal too (diagonal=0)")),
    ("ch03", "causal", "mask_and_renormalize divides by row sums without keepdim",
     "row_sums = masked.sum(dim=-1, keepdim=True)", "row_sums = masked.sum(dim=-1)", NONE),
    ("ch03", "causal", "simple_causal_mask below the diagonal only",
     "    return torch.tril(torch.ones(context_length, context_length))\n",
     "    return torch.ones(context_length, context_length).tril(-1)\n", NONE),
    ("ch03", "causal", "CausalAttention uses torch.dropout with train=True",
     "        attn_weights = self.dropout(attn_weights)\n",
     "        attn_weights = torch.dropout(attn_weights, self.dropout.p, True)\n",
     ch03("causal", "CausalAttention keeps dropout on in eval mode (F.dropout with training=True)")),
    ("ch03", "causal", "causal_attention_weights fills the caller's scores in place",
     "    masked = attn_scores.masked_fill(mask, -torch.inf)\n",
     "    attn_scores.masked_fill_(mask, float('-inf'))\n    masked = attn_scores\n",
     ch03("causal", "causal_attention_weights fills its input in place (masked_fill_)")),
    # -- ch03: mha -----------------------------------------------------------------------------------------
    ("ch03", "mha", "MultiHeadAttention without scaling, Tensor.softmax",
     "attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)", "attn_weights = attn_scores.softmax(-1)",
     ch03("mha", "MultiHeadAttention without the sqrt(head_dim) scaling")),
    ("ch03", "mha", "MultiHeadAttention scaled by self.d_out",
     "attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)",
     "attn_weights = torch.softmax(attn_scores / self.d_out ** 0.5, dim=-1)",
     ch03("mha", "MultiHeadAttention scales by sqrt(d_out) instead of sqrt(head_dim)")),
    ("ch03", "mha", "MultiHeadAttention views the transposed context without contiguous",
     "context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)",
     "context_vec = context_vec.view(b, num_tokens, self.d_out)", VIEW),
    ("ch03", "mha", "MultiHeadAttention merges heads with reshape, no transpose back",
     "        context_vec = (attn_weights @ values).transpose(1, 2)  # (b, num_tokens, num_heads, head_dim)\n"
     "        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)  # (b, num_tokens, d_out)\n",
     "        context_vec = (attn_weights @ values).reshape(b, num_tokens, self.d_out)\n",
     ch03("mha", "MultiHeadAttention merges the heads without transposing back")),
    ("ch03", "mha", "MultiHeadAttention transposes the keys with .T",
     "attn_scores = queries @ keys.transpose(2, 3)", "attn_scores = queries @ keys.T", DOT_T),
    ("ch03", "mha", "MultiHeadAttention masks with the float mask",
     "mask_bool = self.mask.bool()[:num_tokens, :num_tokens]", "mask_bool = self.mask[:num_tokens, :num_tokens]", NONE),
    ("ch03", "mha", "MultiHeadAttention with the masking line commented out",
     "        attn_scores.masked_fill_(mask_bool, -torch.inf)\n", "        # attn_scores.masked_fill_(mask_bool, -torch.inf)\n",
     ch03("mha", "MultiHeadAttention without the mask")),
    ("ch03", "mha", "wrapper concatenates the heads along the batch",
     "torch.cat([head(x) for head in self.heads], dim=-1)", "torch.cat([head(x) for head in self.heads], dim=0)", NONE),
    ("ch03", "mha", "Exercise 3.2 with one head of two features",
     "    return MultiHeadAttentionWrapper(d_in, 1, context_length, dropout, num_heads=2)\n",
     "    return MultiHeadAttentionWrapper(d_in, 2, context_length, dropout, num_heads=1)\n", NONE),
    # -- d2l: masked_softmax ----------------------------------------------------------------------------------
    ("d2l_attention", "masked_softmax", "1-D lengths tiled with torch.tile",
     "valid_lens = torch.repeat_interleave(valid_lens, shape[1])", "valid_lens = torch.tile(valid_lens, (shape[1],))",
     d2l("masked_softmax", "1-D valid_lens tiled instead of repeated per query")),
    ("d2l_attention", "masked_softmax", "sequence_mask keeps the position equal to the length (le)",
     "< valid_len[:, None]", ".le(valid_len[:, None])", d2l("masked_softmax", "off by one: keeps position valid_len too")),
    ("d2l_attention", "masked_softmax", "masked with the default value of sequence_mask",
     "X.reshape(-1, shape[-1]), valid_lens, value=-1e6", "X.reshape(-1, shape[-1]), valid_lens",
     d2l("masked_softmax", "masked with 0 instead of -1e6 before softmax")),
    ("d2l_attention", "masked_softmax", "no valid_lens: softmax over dim=-2",
     "        return nn.functional.softmax(X, dim=-1)\n", "        return X.softmax(dim=-2)\n",
     d2l("masked_softmax", "plain softmax over the wrong axis when valid_lens is None")),
    ("d2l_attention", "masked_softmax", "sequence_mask writes 0 through multiplication",
     "    X[~mask] = value\n", "    X = X * mask\n", NONE),
    # -- d2l: scoring -----------------------------------------------------------------------------------------
    ("d2l_attention", "scoring", "dot product without scaling, torch.matmul", SCORES_D2L,
     "scores = torch.matmul(queries, keys.transpose(1, 2))",
     d2l("scoring", "dot product without the 1/sqrt(d) scaling")),
    ("d2l_attention", "scoring", "dot product transposes the keys with .T", SCORES_D2L,
     "scores = torch.bmm(queries, keys.T) / math.sqrt(d)", DOT_T),
    ("d2l_attention", "scoring", "dot product scaled by the number of keys, shape[1]", SCORES_D2L,
     "scores = torch.bmm(queries, keys.transpose(1, 2)) / keys.shape[1] ** 0.5",
     d2l("scoring", "dot product scaled by the number of keys")),
    ("d2l_attention", "scoring", "additive attention with relu instead of tanh",
     "        features = torch.tanh(features)\n", "        features = torch.relu(features)\n", NONE),
    ("d2l_attention", "scoring", "dot product divided by d, not its square root", SCORES_D2L,
     "scores = torch.bmm(queries, keys.permute(0, 2, 1)) / d", NONE),
    ("d2l_attention", "scoring", "additive attention adds without broadcasting axes",
     "        features = queries.unsqueeze(2) + keys.unsqueeze(1)", "        features = queries + keys", NONE),
    ("d2l_attention", "scoring", "dot product forgets valid_lens",
     SCORES_D2L + "  # (b, num_queries, num_kv_pairs)\n        self.attention_weights = masked_softmax(scores, valid_lens)\n",
     SCORES_D2L + "\n        self.attention_weights = masked_softmax(scores, None)\n",
     d2l("scoring", "dot product ignores valid_lens")),
    ("d2l_attention", "scoring", "additive attention: dropout on the output",
     "        scores = self.w_v(features).squeeze(-1)  # (b, num_queries, num_kv_pairs)\n"
     "        self.attention_weights = masked_softmax(scores, valid_lens)\n"
     "        return torch.bmm(self.dropout(self.attention_weights), values)",
     "        scores = self.w_v(features).squeeze(-1)\n"
     "        self.attention_weights = masked_softmax(scores, valid_lens)\n"
     "        return self.dropout(torch.bmm(self.attention_weights, values))",
     NONE),
    # -- d2l: multihead ---------------------------------------------------------------------------------------
    ("d2l_attention", "multihead", "valid lengths tiled with .repeat",
     "            valid_lens = torch.repeat_interleave(\n                valid_lens, repeats=self.num_heads, dim=0\n"
     "            )  # (batch_size * num_heads,) or (batch_size * num_heads, num_queries)\n",
     "            valid_lens = valid_lens.repeat(self.num_heads, *[1] * (valid_lens.dim() - 1))\n",
     d2l("multihead", "valid_lens tiled instead of repeated per head")),
    ("d2l_attention", "multihead", "valid lengths not repeated per head",
     "            valid_lens = torch.repeat_interleave(\n                valid_lens, repeats=self.num_heads, dim=0\n"
     "            )  # (batch_size * num_heads,) or (batch_size * num_heads, num_queries)\n",
     "            pass\n", NONE),
    ("d2l_attention", "multihead", "transpose_qkv with one reshape",
     "    X = X.reshape(X.shape[0], X.shape[1], num_heads, -1)  # (batch_size, n, num_heads, num_hiddens / num_heads)\n"
     "    X = X.permute(0, 2, 1, 3)  # (batch_size, num_heads, n, num_hiddens / num_heads)\n"
     "    return X.reshape(-1, X.shape[2], X.shape[3])  # (batch_size * num_heads, n, num_hiddens / num_heads)\n",
     "    return X.reshape(X.shape[0] * num_heads, X.shape[1], -1)\n",
     d2l("multihead", "transpose_qkv without the permute")),
    ("d2l_attention", "multihead", "transpose_qkv views the permuted tensor",
     "    return X.reshape(-1, X.shape[2], X.shape[3])  # (batch_size * num_heads, n, num_hiddens / num_heads)\n",
     "    return X.view(-1, X.shape[2], X.shape[3])\n", VIEW),
    ("d2l_attention", "multihead", "W_v created before W_k",
     "        self.W_k = nn.Linear(key_size, num_hiddens, bias=bias)\n        self.W_v = nn.Linear(value_size, num_hiddens, bias=bias)\n",
     "        self.W_v = nn.Linear(value_size, num_hiddens, bias=bias)\n        self.W_k = nn.Linear(key_size, num_hiddens, bias=bias)\n",
     NONE),
    ("d2l_attention", "multihead", "W_o never applied",
     "        return self.W_o(output_concat)  # (batch_size, num_queries, num_hiddens)\n",
     "        return output_concat\n", d2l("multihead", "heads concatenated but not mixed by W_o")),
    # -- d2l: positional_encoding -------------------------------------------------------------------------------
    ("d2l_attention", "positional_encoding", "cos in even columns, sin in odd ones",
     "        self.P[:, :, 0::2] = torch.sin(X)\n        self.P[:, :, 1::2] = torch.cos(X)\n",
     "        self.P[:, :, 1::2] = torch.sin(X)\n        self.P[:, :, 0::2] = torch.cos(X)\n",
     d2l("positional_encoding", "sin and cos swapped")),
    ("d2l_attention", "positional_encoding", "forward without dropout, in place",
     "        return self.dropout(X)\n", "        return X\n", d2l("positional_encoding", "no dropout")),
    ("d2l_attention", "positional_encoding", "position times the frequency written as a power",
     "reshape(-1, 1) / torch.pow(", "reshape(-1, 1) * torch.pow(",
     d2l("positional_encoding", "position multiplied by 10000^(2j/d) instead of divided")),
]

CORRECT = [
    ("ch03", "self_attention_v1", "softmax over dim=1 of a 2-D matrix", SOFTMAX_V1,
     "torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=1)"),
    ("ch03", "causal", "causal mask from tril == 0", "    mask = torch.triu(\n",
     "    mask = torch.tril(torch.ones(n, n, dtype=torch.bool, device=attn_scores.device)) == 0\n    unused = torch.triu(\n"),
    ("ch03", "causal", "masked with -1e9 and a hand-written stable softmax",
     "    masked = attn_scores.masked_fill(mask, -torch.inf)\n    return torch.softmax(masked / d_k**0.5, dim=-1)\n",
     "    masked = attn_scores.masked_fill(mask, -1e9) / d_k**0.5\n"
     "    shifted = torch.exp(masked - masked.max(dim=-1, keepdim=True).values)\n"
     "    return shifted / shifted.sum(dim=-1, keepdim=True)\n"),
    ("ch03", "causal", "softmax imported from torch",
     "    return torch.softmax(masked / d_k**0.5, dim=-1)\n",
     "    from torch import softmax\n\n    return softmax(masked / d_k**0.5, dim=-1)\n"),
    ("ch03", "mha", "dropout applied per head in a loop",
     "        attn_weights = self.dropout(attn_weights)\n",
     "        attn_weights = torch.stack([self.dropout(attn_weights[:, h]) for h in range(self.num_heads)], dim=1)\n"),
    ("ch03", "causal", "dropout drawn after a throw-away random number",
     "        attn_weights = self.dropout(attn_weights)\n",
     "        torch.rand(1)\n        attn_weights = self.dropout(attn_weights)\n"),
    ("d2l_attention", "masked_softmax", "sequence_mask with a Python loop over rows",
     "    X[~mask] = value\n", "    for row, length in enumerate(valid_len.tolist()):\n        X[row, int(length):] = value\n"),
]
