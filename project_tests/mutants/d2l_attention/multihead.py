"""Mutants of solutions/d2l_attention/multihead.py: (description, old, new), old occurs once."""

MUTANTS = [
    ("hard-coded book output shape (zeros)",
     "        queries = transpose_qkv(self.W_q(queries), self.num_heads)",
     "        return torch.zeros(2, 4, 100)\n        queries = transpose_qkv(self.W_q(queries), self.num_heads)"),
    ("transpose_qkv without the permute",
     "    X = X.permute(0, 2, 1, 3)  # (batch_size, num_heads, n, num_hiddens / num_heads)\n"
     "    return X.reshape(-1, X.shape[2], X.shape[3])",
     "    return X.reshape(-1, X.shape[1], X.shape[3])"),
    ("transpose_output without the permute",
     "    X = X.permute(0, 2, 1, 3)  # (batch_size, n, num_heads, head_size)\n"
     "    return X.reshape(X.shape[0], X.shape[1], -1)",
     "    return X.reshape(X.shape[0], X.shape[2], -1)"),
    ("valid_lens tiled instead of repeated per head",
     "torch.repeat_interleave(\n                valid_lens, repeats=self.num_heads, dim=0\n            )",
     "valid_lens.repeat(self.num_heads, *[1] * (valid_lens.dim() - 1))"),
    ("valid_lens not passed to the attention",
     "output = self.attention(queries, keys, values, valid_lens)",
     "output = self.attention(queries, keys, values, None)"),
    ("W_k created before W_q",
     "        self.W_q = nn.Linear(query_size, num_hiddens, bias=bias)\n"
     "        self.W_k = nn.Linear(key_size, num_hiddens, bias=bias)\n",
     "        self.W_k = nn.Linear(key_size, num_hiddens, bias=bias)\n"
     "        self.W_q = nn.Linear(query_size, num_hiddens, bias=bias)\n"),
    ("W_o ignores bias",
     "self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)",
     "self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=False)"),
    ("heads concatenated but not mixed by W_o",
     "return self.W_o(output_concat)", "return output_concat"),
    ("heads merged without transpose_output",
     "output_concat = transpose_output(output, self.num_heads)", "output_concat = output"),
    ("output detached",
     "output_concat = transpose_output(output, self.num_heads)",
     "output_concat = transpose_output(output, self.num_heads).detach()"),
    ("extra dropout, active even in eval mode",
     "return self.W_o(output_concat)", "return self.W_o(nn.functional.dropout(output_concat, 0.5))"),
]
