"""Mutants of solutions/ch03/causal.py: (description, old, new), ``old`` occurring exactly once.

Each is a mistake students make (or a hard-coded answer); every hidden test of test_causal.py
fails on at least one of them, and each of them loses at least one test.
"""

CAUSAL_SEED_123 = (
    "[[-0.4519, 0.2216], [-0.5874, 0.0058], [-0.6300, -0.0632], [-0.5675, -0.0843], "
    "[-0.5526, -0.0981], [-0.5299, -0.1081]]"
)
CAUSAL_WEIGHTS = (
    "[[1.0, 0, 0, 0, 0, 0], [0.5517, 0.4483, 0, 0, 0, 0], [0.3800, 0.3097, 0.3103, 0, 0, 0], "
    "[0.2758, 0.2460, 0.2462, 0.2319, 0, 0], [0.2175, 0.1983, 0.1984, 0.1888, 0.1971, 0], "
    "[0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529]]"
)

MUTANTS = [
    # -- hard-coded textbook values --------------------------------------------------------------
    ("hard-coded textbook values: CausalAttention.forward returns the printed seed-123 output",
     "        return context_vec\n",
     f"        return torch.tensor({CAUSAL_SEED_123}).repeat(b, 1, 1)\n"),
    ("hard-coded textbook values: causal_attention_weights returns the printed seed-789 weights",
     "    return torch.softmax(masked / d_k**0.5, dim=-1)\n",
     f"    return torch.tensor({CAUSAL_WEIGHTS})\n"),
    ("hard-coded textbook values: mask_and_renormalize returns the printed seed-789 weights",
     "    return masked / row_sums\n",
     f"    return torch.tensor({CAUSAL_WEIGHTS})\n"),
    ("hard-coded textbook values: simple_causal_mask always builds the 6x6 mask",
     "    return torch.tril(torch.ones(context_length, context_length))\n",
     "    return torch.tril(torch.ones(6, 6))\n"),
    # -- simple_causal_mask ------------------------------------------------------------------------
    ("simple_causal_mask marks the hidden positions (triu) instead of the allowed ones",
     "    return torch.tril(torch.ones(context_length, context_length))\n",
     "    return torch.triu(torch.ones(context_length, context_length), diagonal=1)\n"),
    # -- mask_and_renormalize ----------------------------------------------------------------------
    ("mask_and_renormalize does not renormalise the rows",
     "    return masked / row_sums\n",
     "    return masked\n"),
    ("mask_and_renormalize sums over dim 1 (works only for 2-D weights)",
     "row_sums = masked.sum(dim=-1, keepdim=True)",
     "row_sums = masked.sum(dim=1, keepdim=True)"),
    ("mask_and_renormalize masks its input in place",
     "masked = attn_weights * mask",
     "masked = attn_weights.mul_(mask)"),
    # -- causal_attention_weights --------------------------------------------------------------------
    ("causal_attention_weights without the sqrt(d_k) scaling",
     "torch.softmax(masked / d_k**0.5, dim=-1)",
     "torch.softmax(masked, dim=-1)"),
    ("causal_attention_weights softmax over the wrong dimension",
     "torch.softmax(masked / d_k**0.5, dim=-1)",
     "torch.softmax(masked / d_k**0.5, dim=-2)"),
    ("causal_attention_weights masks the diagonal too (diagonal=0)",
     "device=attn_scores.device), diagonal=1",
     "device=attn_scores.device), diagonal=0"),
    ("causal_attention_weights fills the future with 0 instead of -inf",
     "masked = attn_scores.masked_fill(mask, -torch.inf)",
     "masked = attn_scores.masked_fill(mask, 0.0)"),
    ("causal_attention_weights fills its input in place (masked_fill_)",
     "masked = attn_scores.masked_fill(mask, -torch.inf)",
     "masked = attn_scores.masked_fill_(mask, -torch.inf)"),
    # -- CausalAttention -------------------------------------------------------------------------------
    ("CausalAttention creates W_key before W_query",
     "        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n",
     "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"),
    ("CausalAttention ignores qkv_bias",
     "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n",
     "        self.W_value = nn.Linear(d_in, d_out, bias=False)\n"),
    ("CausalAttention without the sqrt(d_k) scaling",
     "torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)",
     "torch.softmax(attn_scores, dim=-1)"),
    ("CausalAttention without the mask",
     "        attn_scores.masked_fill_(\n            self.mask.bool()[:num_tokens, :num_tokens], -torch.inf\n        )\n",
     ""),
    ("CausalAttention masks the diagonal too (diagonal=0)",
     '"mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)',
     '"mask", torch.triu(torch.ones(context_length, context_length), diagonal=0)'),
    ("CausalAttention does not slice the mask to the number of tokens",
     "self.mask.bool()[:num_tokens, :num_tokens]",
     "self.mask.bool()"),
    ("CausalAttention applies dropout to the context vectors instead of the weights",
     "        attn_weights = self.dropout(attn_weights)\n        context_vec = attn_weights @ values",
     "        context_vec = self.dropout(attn_weights @ values)"),
    ("CausalAttention keeps dropout on in eval mode (F.dropout with training=True)",
     "        attn_weights = self.dropout(attn_weights)\n",
     "        attn_weights = nn.functional.dropout(attn_weights, self.dropout.p, training=True)\n"),
    ("CausalAttention keeps the mask as a plain attribute, not a buffer",
     '        self.register_buffer(\n            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)\n        )\n',
     "        self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)\n"),
    ("CausalAttention detaches the values (no gradient to W_value)",
     "        values = self.W_value(x)  # (b, num_tokens, d_out)\n",
     "        values = self.W_value(x).detach()  # (b, num_tokens, d_out)\n"),
]
