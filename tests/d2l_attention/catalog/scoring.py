"""Known mistakes in ``scoring.py`` (d2l_attention): each a change of the reference and its concept
(see :mod:`grader.catalog`). Instructor only: the ``old`` texts are solution lines.
"""

from grader.catalog import Mistake

MISTAKES = [
    Mistake('scoring', 'hard-coded book output of AdditiveAttention',
            old=('        scores = self.w_v(features).squeeze(-1)  # (b, num_queries, num_kv_pairs)\n'
                 '        self.attention_weights = masked_softmax(scores, valid_lens)\n'
                 '        return torch.bmm(self.dropout(self.attention_weights), values)'),
            new='        return torch.tensor([[[2.0, 3.0, 4.0, 5.0]], [[10.0, 11.0, 12.0, 13.0]]])',
            concept=''),
    Mistake('scoring', 'hard-coded book output of DotProductAttention',
            old=('        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)  # (b, num_queries, num_kv_pairs)\n'
                 '        self.attention_weights = masked_softmax(scores, valid_lens)\n'
                 '        return torch.bmm(self.dropout(self.attention_weights), values)'),
            new='        return torch.tensor([[[2.0, 3.0, 4.0, 5.0]], [[10.0, 11.0, 12.0, 13.0]]])',
            concept=''),
    Mistake('scoring', 'W_q created before W_k',
            old=('        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)\n'
                 '        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)\n'),
            new=('        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)\n'
                 '        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)\n'),
            concept='Create the layers in the order the docstring gives: the order decides which random initial weights each one gets.'),
    Mistake('scoring', 'additive attention without tanh',
            old='features = torch.tanh(features)',
            new='features = features',
            concept='Additive attention applies tanh to W_q q + W_k k before w_v.'),
    Mistake('scoring', 'additive attention ignores valid_lens',
            old=('        scores = self.w_v(features).squeeze(-1)  # (b, num_queries, num_kv_pairs)\n'
                 '        self.attention_weights = masked_softmax(scores, valid_lens)\n'
                 '        return torch.bmm(self.dropout(self.attention_weights), values)'),
            new=('        scores = self.w_v(features).squeeze(-1)  # (b, num_queries, num_kv_pairs)\n'
                 '        self.attention_weights = masked_softmax(scores, None)\n'
                 '        return torch.bmm(self.dropout(self.attention_weights), values)'),
            concept='Pass valid_lens on to masked_softmax.'),
    Mistake('scoring', 'additive attention: dropout even in eval mode',
            old=('        scores = self.w_v(features).squeeze(-1)  # (b, num_queries, num_kv_pairs)\n'
                 '        self.attention_weights = masked_softmax(scores, valid_lens)\n'
                 '        return torch.bmm(self.dropout(self.attention_weights), values)'),
            new=('        scores = self.w_v(features).squeeze(-1)  # (b, num_queries, num_kv_pairs)\n'
                 '        self.attention_weights = masked_softmax(scores, valid_lens)\n'
                 '        return torch.bmm(nn.functional.dropout(self.attention_weights, self.dropout.p), values)'),
            concept='Dropout stays on in eval mode: use the nn.Dropout module self.dropout (model.eval() switches it off).'),
    Mistake('scoring', 'additive attention: no dropout at all',
            old=('        scores = self.w_v(features).squeeze(-1)  # (b, num_queries, num_kv_pairs)\n'
                 '        self.attention_weights = masked_softmax(scores, valid_lens)\n'
                 '        return torch.bmm(self.dropout(self.attention_weights), values)'),
            new=('        scores = self.w_v(features).squeeze(-1)  # (b, num_queries, num_kv_pairs)\n'
                 '        self.attention_weights = masked_softmax(scores, valid_lens)\n'
                 '        return torch.bmm(self.attention_weights, values)'),
            concept='Apply self.dropout to the attention weights before multiplying by the values.', random=True),
    Mistake('scoring', 'additive attention: scores detached',
            old=('        scores = self.w_v(features).squeeze(-1)  # (b, num_queries, num_kv_pairs)\n'
                 '        self.attention_weights = masked_softmax(scores, valid_lens)\n'
                 '        return torch.bmm(self.dropout(self.attention_weights), values)'),
            new=('        scores = self.w_v(features).squeeze(-1).detach()  # (b, num_queries, num_kv_pairs)\n'
                 '        self.attention_weights = masked_softmax(scores, valid_lens)\n'
                 '        return torch.bmm(self.dropout(self.attention_weights), values)'),
            concept='Something cuts the graph (.detach(), .data, torch.no_grad()): every parameter must receive a gradient.'),
    Mistake('scoring', 'additive attention does not keep attention_weights',
            old=('        scores = self.w_v(features).squeeze(-1)  # (b, num_queries, num_kv_pairs)\n'
                 '        self.attention_weights = masked_softmax(scores, valid_lens)\n'
                 '        return torch.bmm(self.dropout(self.attention_weights), values)'),
            new=('        scores = self.w_v(features).squeeze(-1)  # (b, num_queries, num_kv_pairs)\n'
                 '        attention_weights = masked_softmax(scores, valid_lens)\n'
                 '        return torch.bmm(self.dropout(attention_weights), values)'),
            concept='Keep the weights of the last call in self.attention_weights (before dropout).'),
    Mistake('scoring', 'dot product without the 1/sqrt(d) scaling',
            old=' / math.sqrt(d)  #',
            new='  #',
            concept='The scores are not scaled: divide them by sqrt(d) (d = queries.shape[-1]).'),
    Mistake('scoring', 'dot product scaled by the number of keys',
            old='math.sqrt(d)  #',
            new='math.sqrt(keys.shape[1])  #',
            concept='Scale by sqrt(d), the size of the queries and keys (queries.shape[-1]), not by the number of keys.'),
    Mistake('scoring', 'dot product ignores valid_lens',
            old=('        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)  # (b, num_queries, num_kv_pairs)\n'
                 '        self.attention_weights = masked_softmax(scores, valid_lens)\n'
                 '        return torch.bmm(self.dropout(self.attention_weights), values)'),
            new=('        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)  # (b, num_queries, num_kv_pairs)\n'
                 '        self.attention_weights = masked_softmax(scores, None)\n'
                 '        return torch.bmm(self.dropout(self.attention_weights), values)'),
            concept='Pass valid_lens on to masked_softmax.'),
    Mistake('scoring', 'dot product: dropout on the output instead of the weights',
            old=('        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)  # (b, num_queries, num_kv_pairs)\n'
                 '        self.attention_weights = masked_softmax(scores, valid_lens)\n'
                 '        return torch.bmm(self.dropout(self.attention_weights), values)'),
            new=('        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)  # (b, num_queries, num_kv_pairs)\n'
                 '        self.attention_weights = masked_softmax(scores, valid_lens)\n'
                 '        return self.dropout(torch.bmm(self.attention_weights, values))'),
            concept='Apply dropout to the attention weights, then multiply by the values (not dropout on the output).', random=True),
    Mistake('scoring', 'dot product: dropout even in eval mode',
            old=('        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)  # (b, num_queries, num_kv_pairs)\n'
                 '        self.attention_weights = masked_softmax(scores, valid_lens)\n'
                 '        return torch.bmm(self.dropout(self.attention_weights), values)'),
            new=('        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)  # (b, num_queries, num_kv_pairs)\n'
                 '        self.attention_weights = masked_softmax(scores, valid_lens)\n'
                 '        return torch.bmm(nn.functional.dropout(self.attention_weights, self.dropout.p), values)'),
            concept='Dropout stays on in eval mode: use the nn.Dropout module self.dropout (model.eval() switches it off).'),
    Mistake('scoring', 'dot product: scores detached',
            old=('        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)  # (b, num_queries, num_kv_pairs)\n'
                 '        self.attention_weights = masked_softmax(scores, valid_lens)\n'
                 '        return torch.bmm(self.dropout(self.attention_weights), values)'),
            new=('        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d) * 1.0; scores = scores.detach()  # (b, num_queries, num_kv_pairs)\n'
                 '        self.attention_weights = masked_softmax(scores, valid_lens)\n'
                 '        return torch.bmm(self.dropout(self.attention_weights), values)'),
            concept='Something cuts the graph (.detach(), .data, torch.no_grad()): every parameter must receive a gradient.'),
    Mistake('scoring', 'dot product: valid_lens has no default',
            old=('    def forward(self, queries, keys, values, valid_lens=None):\n'
                 '        """Scaled dot-product'),
            new=('    def forward(self, queries, keys, values, valid_lens):\n'
                 '        """Scaled dot-product'),
            concept='Give forward the default valid_lens=None.'),
]
