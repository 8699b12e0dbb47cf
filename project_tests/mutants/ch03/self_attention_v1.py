"""Mutants of solutions/ch03/self_attention_v1.py: (description, old, new) text replacements."""

FORWARD = """        keys = x @ self.W_key
        queries = x @ self.W_query
        values = x @ self.W_value
        attn_scores = queries @ keys.T  # (num_tokens, num_tokens)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values"""

HARD_CODED = """        return torch.tensor([[0.2996, 0.8053], [0.3061, 0.8210], [0.3058, 0.8203],
                             [0.2948, 0.7939], [0.2927, 0.7891], [0.2990, 0.8040]])"""

MUTANTS = [
    ("hard-coded textbook output", FORWARD, HARD_CODED),
    ("scores not scaled by sqrt(d_k)",
     "torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)", "torch.softmax(attn_scores, dim=-1)"),
    ("softmax over dim 0",
     "torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)", "torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=0)"),
    ("keys and queries swapped", "attn_scores = queries @ keys.T", "attn_scores = keys @ queries.T"),
    ("W_key created before W_query",
     "        self.W_query = nn.Parameter(torch.rand(d_in, d_out))\n        self.W_key = nn.Parameter(torch.rand(d_in, d_out))\n",
     "        self.W_key = nn.Parameter(torch.rand(d_in, d_out))\n        self.W_query = nn.Parameter(torch.rand(d_in, d_out))\n"),
    ("W_value drawn with torch.randn",
     "self.W_value = nn.Parameter(torch.rand(d_in, d_out))", "self.W_value = nn.Parameter(torch.randn(d_in, d_out))"),
    ("W_key a plain tensor, not an nn.Parameter",
     "self.W_key = nn.Parameter(torch.rand(d_in, d_out))", "self.W_key = torch.rand(d_in, d_out)"),
    ("values computed from a detached W_value", "values = x @ self.W_value", "values = x @ self.W_value.detach()"),
    ("values computed with W_key", "values = x @ self.W_value", "values = x @ self.W_key"),
]
