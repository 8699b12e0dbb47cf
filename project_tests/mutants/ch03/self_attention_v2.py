"""Mutants of solutions/ch03/self_attention_v2.py: (description, old, new) text replacements."""

FORWARD = """        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.T  # (num_tokens, num_tokens)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values"""

HARD_CODED = """        return torch.tensor([[-0.0739, 0.0713], [-0.0748, 0.0703], [-0.0749, 0.0702],
                             [-0.0760, 0.0685], [-0.0763, 0.0679], [-0.0754, 0.0693]])"""

MUTANTS = [
    ("hard-coded textbook output", FORWARD, HARD_CODED),
    ("scores not scaled by sqrt(d_k)",
     "torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)", "torch.softmax(attn_scores, dim=-1)"),
    ("softmax over dim 0",
     "torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)", "torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=0)"),
    ("keys and queries swapped", "attn_scores = queries @ keys.T", "attn_scores = keys @ queries.T"),
    ("W_value created before W_key",
     "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n",
     "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"),
    ("W_key created before W_query",
     "        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n",
     "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"),
    ("qkv_bias ignored by W_query",
     "self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)", "self.W_query = nn.Linear(d_in, d_out, bias=False)"),
    ("W_value always has a bias",
     "self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)", "self.W_value = nn.Linear(d_in, d_out, bias=True)"),
    ("values from a detached layer output", "values = self.W_value(x)", "values = self.W_value(x).detach()"),
]
