"""Mutants of solutions/d2l_attention/scoring.py: (description, old, new), old occurs once."""

ADDITIVE_TAIL = (
    "        scores = self.w_v(features).squeeze(-1)  # (b, num_queries, num_kv_pairs)\n"
    "        self.attention_weights = masked_softmax(scores, valid_lens)\n"
    "        return torch.bmm(self.dropout(self.attention_weights), values)"
)
DOT_TAIL = (
    "        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)  # (b, num_queries, num_kv_pairs)\n"
    "        self.attention_weights = masked_softmax(scores, valid_lens)\n"
    "        return torch.bmm(self.dropout(self.attention_weights), values)"
)
BOOK = "torch.tensor([[[2.0, 3.0, 4.0, 5.0]], [[10.0, 11.0, 12.0, 13.0]]])"

MUTANTS = [
    ("hard-coded book output of AdditiveAttention",
     ADDITIVE_TAIL, f"        return {BOOK}"),
    ("hard-coded book output of DotProductAttention",
     DOT_TAIL, f"        return {BOOK}"),
    ("W_q created before W_k",
     "        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)\n"
     "        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)\n",
     "        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)\n"
     "        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)\n"),
    ("additive attention without tanh",
     "features = torch.tanh(features)", "features = features"),
    ("additive attention ignores valid_lens",
     ADDITIVE_TAIL, ADDITIVE_TAIL.replace("masked_softmax(scores, valid_lens)", "masked_softmax(scores, None)")),
    ("additive attention: dropout even in eval mode",
     ADDITIVE_TAIL, ADDITIVE_TAIL.replace("self.dropout(self.attention_weights)",
                                          "nn.functional.dropout(self.attention_weights, self.dropout.p)")),
    ("additive attention: no dropout at all",
     ADDITIVE_TAIL, ADDITIVE_TAIL.replace("self.dropout(self.attention_weights)", "self.attention_weights")),
    ("additive attention: scores detached",
     ADDITIVE_TAIL, ADDITIVE_TAIL.replace(".squeeze(-1)", ".squeeze(-1).detach()")),
    ("additive attention does not keep attention_weights",
     ADDITIVE_TAIL, ADDITIVE_TAIL.replace("self.attention_weights", "attention_weights")),
    ("dot product without the 1/sqrt(d) scaling",
     " / math.sqrt(d)  #", "  #"),
    ("dot product scaled by the number of keys",
     "math.sqrt(d)  #", "math.sqrt(keys.shape[1])  #"),
    ("dot product ignores valid_lens",
     DOT_TAIL, DOT_TAIL.replace("masked_softmax(scores, valid_lens)", "masked_softmax(scores, None)")),
    ("dot product: dropout on the output instead of the weights",
     DOT_TAIL, DOT_TAIL.replace("torch.bmm(self.dropout(self.attention_weights), values)",
                                "self.dropout(torch.bmm(self.attention_weights, values))")),
    ("dot product: dropout even in eval mode",
     DOT_TAIL, DOT_TAIL.replace("self.dropout(self.attention_weights)",
                                "nn.functional.dropout(self.attention_weights, self.dropout.p)")),
    ("dot product: scores detached",
     DOT_TAIL, DOT_TAIL.replace("/ math.sqrt(d)", "/ math.sqrt(d) * 1.0; scores = scores.detach()")),
    ("dot product: valid_lens has no default",
     "    def forward(self, queries, keys, values, valid_lens=None):\n        \"\"\"Scaled dot-product",
     "    def forward(self, queries, keys, values, valid_lens):\n        \"\"\"Scaled dot-product"),
]
