"""Mutants of solutions/ch03/mha.py: (description, old, new), ``old`` occurring exactly once.

mha.py is graded against the reference causal.py, so these touch only the wrapper, the
multi-head class and the two exercises. Every hidden test of test_mha.py fails on at least one
of them, and each of them loses at least one test.
"""

WRAPPER_SEED_123 = (
    "[[-0.4519, 0.2216, 0.4772, 0.1063], [-0.5874, 0.0058, 0.5891, 0.3257], [-0.6300, -0.0632, 0.6202, 0.3860], "
    "[-0.5675, -0.0843, 0.5478, 0.3589], [-0.5526, -0.0981, 0.5321, 0.3428], [-0.5299, -0.1081, 0.5077, 0.3493]]"
)
MHA_SEED_123 = (
    "[[0.3190, 0.4858], [0.2943, 0.3897], [0.2856, 0.3593], [0.2693, 0.3873], [0.2639, 0.3928], [0.2575, 0.4028]]"
)

MUTANTS = [
    # -- hard-coded textbook values --------------------------------------------------------------
    ("hard-coded textbook values: MultiHeadAttention.forward returns the printed seed-123 output",
     "        return self.out_proj(context_vec)  # (b, num_tokens, d_out)\n",
     f"        return torch.tensor({MHA_SEED_123}).repeat(b, 1, 1)\n"),
    ("hard-coded textbook values: the wrapper returns the printed seed-123 output",
     "        return torch.cat([head(x) for head in self.heads], dim=-1)",
     f"        return torch.tensor({WRAPPER_SEED_123}).repeat(x.shape[0], 1, 1)"),
    ("hard-coded textbook values: exercise_3_2_wrapper builds the textbook sizes (d_in=3, context_length=6)",
     "    return MultiHeadAttentionWrapper(d_in, 1, context_length, dropout, num_heads=2)\n",
     "    return MultiHeadAttentionWrapper(3, 1, 6, dropout, num_heads=2)\n"),
    # -- MultiHeadAttentionWrapper ---------------------------------------------------------------
    ("wrapper concatenates the heads in reverse order",
     "torch.cat([head(x) for head in self.heads], dim=-1)",
     "torch.cat([head(x) for head in reversed(self.heads)], dim=-1)"),
    ("wrapper shares one CausalAttention between all heads ([head] * num_heads)",
     "                for _ in range(num_heads)\n            ]\n",
     "            ]\n            * num_heads\n"),
    ("wrapper keeps its heads in a plain list, not an nn.ModuleList",
     "        self.heads = nn.ModuleList(\n",
     "        self.heads = list(\n"),
    ("wrapper does not pass dropout and qkv_bias on to its heads",
     "                CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)\n",
     "                CausalAttention(d_in, d_out, context_length, 0.0)\n"),
    # -- MultiHeadAttention ------------------------------------------------------------------------
    ("MultiHeadAttention without the check that d_out is divisible by num_heads",
     '        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"\n',
     ""),
    ("MultiHeadAttention creates out_proj before the query, key and value layers",
     "        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
     "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.out_proj = nn.Linear(d_out, d_out)\n",
     "        self.out_proj = nn.Linear(d_out, d_out)\n        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
     "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n"),
    ("MultiHeadAttention creates W_value before W_key",
     "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n",
     "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"),
    ("MultiHeadAttention ignores qkv_bias",
     "        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
     "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n",
     "        self.W_query = nn.Linear(d_in, d_out, bias=False)\n        self.W_key = nn.Linear(d_in, d_out, bias=False)\n"
     "        self.W_value = nn.Linear(d_in, d_out, bias=False)\n"),
    ("MultiHeadAttention without the sqrt(head_dim) scaling",
     "torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)",
     "torch.softmax(attn_scores, dim=-1)"),
    ("MultiHeadAttention scales by sqrt(d_out) instead of sqrt(head_dim)",
     "torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)",
     "torch.softmax(attn_scores / self.d_out ** 0.5, dim=-1)"),
    ("MultiHeadAttention without the mask",
     "        attn_scores.masked_fill_(mask_bool, -torch.inf)\n",
     ""),
    ("MultiHeadAttention does not slice the mask to the number of tokens",
     "mask_bool = self.mask.bool()[:num_tokens, :num_tokens]",
     "mask_bool = self.mask.bool()"),
    ("MultiHeadAttention masks the diagonal too (diagonal=0)",
     '"mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)',
     '"mask", torch.triu(torch.ones(context_length, context_length), diagonal=0)'),
    ("MultiHeadAttention splits the heads with a view straight to (b, num_heads, num_tokens, head_dim)",
     "        keys = keys.transpose(1, 2)  # (b, num_heads, num_tokens, head_dim)\n"
     "        queries = queries.transpose(1, 2)  # (b, num_heads, num_tokens, head_dim)\n"
     "        values = values.transpose(1, 2)  # (b, num_heads, num_tokens, head_dim)\n",
     "        keys = keys.reshape(b, self.num_heads, num_tokens, self.head_dim)\n"
     "        queries = queries.reshape(b, self.num_heads, num_tokens, self.head_dim)\n"
     "        values = values.reshape(b, self.num_heads, num_tokens, self.head_dim)\n"),
    ("MultiHeadAttention merges the heads without transposing back",
     "context_vec = (attn_weights @ values).transpose(1, 2)",
     "context_vec = (attn_weights @ values)"),
    ("MultiHeadAttention forgets out_proj",
     "        return self.out_proj(context_vec)  # (b, num_tokens, d_out)\n",
     "        return context_vec\n"),
    ("MultiHeadAttention applies dropout to the context vectors instead of the weights",
     "        attn_weights = self.dropout(attn_weights)\n\n"
     "        context_vec = (attn_weights @ values).transpose(1, 2)  # (b, num_tokens, num_heads, head_dim)\n"
     "        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)  # (b, num_tokens, d_out)\n",
     "        context_vec = (attn_weights @ values).transpose(1, 2)\n"
     "        context_vec = self.dropout(context_vec.contiguous().view(b, num_tokens, self.d_out))\n"),
    ("MultiHeadAttention keeps dropout on in eval mode (F.dropout with training=True)",
     "        attn_weights = self.dropout(attn_weights)\n",
     "        attn_weights = nn.functional.dropout(attn_weights, self.dropout.p, training=True)\n"),
    ("MultiHeadAttention keeps the mask as a plain attribute, not a buffer",
     '        self.register_buffer(\n            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)\n        )\n',
     "        self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)\n"),
    ("MultiHeadAttention detaches the keys (no gradient to W_key)",
     "        keys = self.W_key(x)  # (b, num_tokens, d_out)\n",
     "        keys = self.W_key(x).detach()  # (b, num_tokens, d_out)\n"),
    # -- Exercises ---------------------------------------------------------------------------------
    ("Exercise 3.2 keeps d_out=2 per head (output vectors of size 4)",
     "    return MultiHeadAttentionWrapper(d_in, 1, context_length, dropout, num_heads=2)\n",
     "    return MultiHeadAttentionWrapper(d_in, 2, context_length, dropout, num_heads=2)\n"),
    ("Exercise 3.2 ignores the dropout argument",
     "    return MultiHeadAttentionWrapper(d_in, 1, context_length, dropout, num_heads=2)\n",
     "    return MultiHeadAttentionWrapper(d_in, 1, context_length, 0.0, num_heads=2)\n"),
    ("Exercise 3.3 with qkv_bias=True",
     "    return MultiHeadAttention(768, 768, 1024, 0.0, num_heads=12)\n",
     "    return MultiHeadAttention(768, 768, 1024, 0.0, num_heads=12, qkv_bias=True)\n"),
    ("Exercise 3.3 with 6 heads (same parameter count)",
     "    return MultiHeadAttention(768, 768, 1024, 0.0, num_heads=12)\n",
     "    return MultiHeadAttention(768, 768, 1024, 0.0, num_heads=6)\n"),
]
