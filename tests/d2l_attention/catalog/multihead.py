"""Known mistakes in ``multihead.py`` (d2l_attention): each a change of the reference and its concept
(see :mod:`grader.catalog`). Instructor only: the ``old`` texts are solution lines.
"""

from grader.catalog import Mistake

MISTAKES = [
    Mistake('multihead', 'hard-coded book output shape (zeros)',
            old='        queries = transpose_qkv(self.W_q(queries), self.num_heads)',
            new=('        return torch.zeros(2, 4, 100)\n'
                 '        queries = transpose_qkv(self.W_q(queries), self.num_heads)'),
            concept=''),
    Mistake('multihead', 'transpose_qkv without the permute',
            old=('    X = X.permute(0, 2, 1, 3)  # (batch_size, num_heads, n, num_hiddens / num_heads)\n'
                 '    return X.reshape(-1, X.shape[2], X.shape[3])'),
            new='    return X.reshape(-1, X.shape[1], X.shape[3])',
            concept='transpose_qkv must move the head axis in front of the sequence axis (permute(0, 2, 1, 3)) before merging it with the batch axis; a reshape alone mixes tokens and heads.'),
    Mistake('multihead', 'transpose_output without the permute',
            old=('    X = X.permute(0, 2, 1, 3)  # (batch_size, n, num_heads, head_size)\n'
                 '    return X.reshape(X.shape[0], X.shape[1], -1)'),
            new='    return X.reshape(X.shape[0], X.shape[2], -1)',
            concept='transpose_output must move the head axis back behind the sequence axis (permute(0, 2, 1, 3)) before merging the heads.'),
    Mistake('multihead', 'valid_lens tiled instead of repeated per head',
            old=('torch.repeat_interleave(\n'
                 '                valid_lens, repeats=self.num_heads, dim=0\n'
                 '            )'),
            new='valid_lens.repeat(self.num_heads, *[1] * (valid_lens.dim() - 1))',
            concept='Repeat each valid length num_heads times entry by entry (torch.repeat_interleave(valid_lens, num_heads, dim=0)), not the whole vector.'),
    Mistake('multihead', 'valid_lens not passed to the attention',
            old='output = self.attention(queries, keys, values, valid_lens)',
            new='output = self.attention(queries, keys, values, None)',
            concept='Pass valid_lens (repeated per head) on to self.attention.'),
    Mistake('multihead', 'W_k created before W_q',
            old=('        self.W_q = nn.Linear(query_size, num_hiddens, bias=bias)\n'
                 '        self.W_k = nn.Linear(key_size, num_hiddens, bias=bias)\n'),
            new=('        self.W_k = nn.Linear(key_size, num_hiddens, bias=bias)\n'
                 '        self.W_q = nn.Linear(query_size, num_hiddens, bias=bias)\n'),
            concept='Create the layers in the order the docstring gives: the order decides which random initial weights each one gets.'),
    Mistake('multihead', 'W_o ignores bias',
            old='self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)',
            new='self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=False)',
            concept='Pass bias=bias to W_o too.'),
    Mistake('multihead', 'heads concatenated but not mixed by W_o',
            old='return self.W_o(output_concat)',
            new='return output_concat',
            concept="Apply W_o to the merged heads: it mixes the heads' outputs."),
    Mistake('multihead', 'heads merged without transpose_output',
            old='output_concat = transpose_output(output, self.num_heads)',
            new='output_concat = output',
            concept='Merge the heads with transpose_output (the inverse of transpose_qkv).'),
    Mistake('multihead', 'output detached',
            old='output_concat = transpose_output(output, self.num_heads)',
            new='output_concat = transpose_output(output, self.num_heads).detach()',
            concept='Something cuts the graph (.detach(), .data, torch.no_grad()): every parameter must receive a gradient.'),
    Mistake('multihead', 'extra dropout, active even in eval mode',
            old='return self.W_o(output_concat)',
            new='return self.W_o(nn.functional.dropout(output_concat, 0.5))',
            concept='Dropout stays on in eval mode: apply dropout only through an nn.Dropout module (model.eval() switches it off).'),
]
