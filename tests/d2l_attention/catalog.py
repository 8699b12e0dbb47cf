"""The misconception catalog of d2l_attention: known mistakes, each a change of the reference and its
concept (see :mod:`grader.catalog`). Instructor only: the ``old`` texts are solution lines.
"""

from grader.catalog import Mistake

MISTAKES = [
    # -- masked_softmax ----------------------------------------------------------------------------
    Mistake('masked_softmax', 'hard-coded book output of sequence_mask',
            old='    maxlen = X.size(1)\n',
            new='    return torch.tensor([[1, 0, 0], [4, 5, 0]])\n',
            concept=''),
    Mistake('masked_softmax', 'off by one: keeps position valid_len too',
            old='< valid_len[:, None]',
            new='<= valid_len[:, None]',
            concept='Off by one: positions 0 .. valid_len - 1 are valid (compare the position with the length using <).'),
    Mistake('masked_softmax', 'sequence_mask ignores value (writes 0)',
            old='X[~mask] = value',
            new='X[~mask] = 0',
            concept='sequence_mask must write `value` (the argument) into the masked positions, not 0.'),
    Mistake('masked_softmax', '1-D valid_lens tiled instead of repeated per query',
            old='torch.repeat_interleave(valid_lens, shape[1])',
            new='valid_lens.repeat(shape[1])',
            concept="A 1-D valid_lens gives each batch item's length to all of its queries: repeat every entry (torch.repeat_interleave(valid_lens, num_queries)), do not tile the whole vector."),
    Mistake('masked_softmax', '2-D valid_lens flattened query-major (transposed)',
            old='valid_lens = valid_lens.reshape(-1)',
            new='valid_lens = valid_lens.T.reshape(-1)',
            concept='A 2-D valid_lens already holds one length per query: flatten it row by row (valid_lens.reshape(-1)).'),
    Mistake('masked_softmax', 'masked with 0 instead of -1e6 before softmax',
            old='valid_lens, value=-1e6',
            new='valid_lens, value=0',
            concept='Masked scores must become -1e6 before softmax, not 0: exp(0) = 1 still gives the padding weight.'),
    Mistake('masked_softmax', 'plain softmax over the wrong axis when valid_lens is None',
            old='return nn.functional.softmax(X, dim=-1)',
            new='return nn.functional.softmax(X, dim=1)',
            concept='Softmax runs over the wrong dimension: use dim=-1, so that each row (one query) sums to 1.'),
    # -- scoring -----------------------------------------------------------------------------------
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
    # -- positional_encoding -----------------------------------------------------------------------
    Mistake('positional_encoding', 'hard-coded book size: the table is always built for num_hiddens = 32',
            old='torch.arange(0, num_hiddens, 2, dtype=torch.float32) / num_hiddens',
            new='torch.arange(0, 32, 2, dtype=torch.float32) / 32',
            concept=''),
    Mistake('positional_encoding', 'sin and cos swapped',
            old=('self.P[:, :, 0::2] = torch.sin(X)\n'
                 '        self.P[:, :, 1::2] = torch.cos(X)'),
            new=('self.P[:, :, 0::2] = torch.cos(X)\n'
                 '        self.P[:, :, 1::2] = torch.sin(X)'),
            concept='Even columns are sin, odd columns cos: P[:, 0::2] = sin(X), P[:, 1::2] = cos(X).'),
    Mistake('positional_encoding', 'exponent j/d instead of 2j/d',
            old='torch.arange(0, num_hiddens, 2, dtype=torch.float32) / num_hiddens',
            new='torch.arange(num_hiddens // 2, dtype=torch.float32) / num_hiddens',
            concept='The frequencies are 1 / 10000^(2j/d) for column pair j: the exponent is torch.arange(0, num_hiddens, 2) / num_hiddens.'),
    Mistake('positional_encoding', 'position multiplied by 10000^(2j/d) instead of divided',
            old='reshape(-1, 1) / torch.pow(',
            new='reshape(-1, 1) * torch.pow(',
            concept='Divide the position by 10000^(2j/d), do not multiply it.'),
    Mistake('positional_encoding', 'forward adds the table from position 1',
            old='self.P[:, : X.shape[1], :]',
            new='self.P[:, 1 : X.shape[1] + 1, :]',
            concept='Add the rows of P for positions 0 .. n - 1: self.P[:, :X.shape[1], :].'),
    Mistake('positional_encoding', 'forward returns the table and drops X',
            old='X = X + self.P',
            new='X = 0 * X + self.P',
            concept='forward adds the table to X: X + self.P[:, :X.shape[1], :].'),
    Mistake('positional_encoding', 'dropout on X before adding the table',
            old=('X = X + self.P[:, : X.shape[1], :].to(X.device)  # (batch_size, num_steps, num_hiddens)\n'
                 '        return self.dropout(X)'),
            new='return self.dropout(X) + self.P[:, : X.shape[1], :].to(X.device)',
            concept='Apply dropout to the sum X + P, not to X before adding the table.', random=True),
    Mistake('positional_encoding', 'no dropout',
            old='return self.dropout(X)',
            new='return X',
            concept='Apply self.dropout to the sum in forward.', random=True),
    Mistake('positional_encoding', 'dropout even in eval mode',
            old='return self.dropout(X)',
            new='return nn.functional.dropout(X, self.dropout.p)',
            concept='Dropout stays on in eval mode: use the nn.Dropout module self.dropout (model.eval() switches it off).'),
    # -- multihead ---------------------------------------------------------------------------------
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
    # -- seq2seq_attention -------------------------------------------------------------------------
    Mistake('seq2seq_attention', 'hard-coded book output shapes (zeros)',
            old='        enc_outputs, hidden_state, enc_valid_lens = state  #',
            new=('        return torch.zeros(4, 7, 10), [torch.zeros(4, 7, 16), torch.zeros(2, 4, 16), None]\n'
                 '        enc_outputs, hidden_state, enc_valid_lens = state  #'),
            concept=''),
    Mistake('seq2seq_attention', 'query from the first GRU layer',
            old='query = torch.unsqueeze(hidden_state[-1], dim=1)',
            new='query = torch.unsqueeze(hidden_state[0], dim=1)',
            concept="The query is the decoder's hidden state of the last GRU layer: hidden_state[-1], not hidden_state[0]."),
    Mistake('seq2seq_attention', 'embedded token before the context',
            old='x = torch.cat((context, torch.unsqueeze(x, dim=1)), dim=-1)',
            new='x = torch.cat((torch.unsqueeze(x, dim=1), context), dim=-1)',
            concept='Concatenate the context first, then the embedded token: torch.cat((context, x), dim=-1).'),
    Mistake('seq2seq_attention', 'enc_valid_lens not passed to the attention',
            old='context = self.attention(query, enc_outputs, enc_outputs, enc_valid_lens)',
            new='context = self.attention(query, enc_outputs, enc_outputs, None)',
            concept='Pass enc_valid_lens on to the attention, so that the padding of each source is masked.'),
    Mistake('seq2seq_attention', 'embedding created before the attention',
            old=('        self.attention = AdditiveAttention(num_hiddens, num_hiddens, num_hiddens, dropout)\n'
                 '        self.embedding = nn.Embedding(vocab_size, embed_size)\n'),
            new=('        self.embedding = nn.Embedding(vocab_size, embed_size)\n'
                 '        self.attention = AdditiveAttention(num_hiddens, num_hiddens, num_hiddens, dropout)\n'),
            concept='Create the layers in the order the docstring gives: the order decides which random initial weights each one gets.'),
    Mistake('seq2seq_attention', "GRU always stepped from the encoder's state",
            old='out, hidden_state = self.rnn(x.permute(1, 0, 2), hidden_state)  #',
            new='out, hidden_state = self.rnn(x.permute(1, 0, 2), state[1])  #',
            concept="Step the GRU from the hidden state it returned at the previous step, not from the encoder's state every time."),
    Mistake('seq2seq_attention', "encoder's outputs not permuted in init_state",
            old='return (outputs.permute(1, 0, 2), hidden_state, enc_valid_lens)',
            new='return (outputs, hidden_state, enc_valid_lens)',
            concept='Return outputs.permute(1, 0, 2) from init_state: (num_steps, batch_size, h) -> (batch_size, num_steps, h).'),
    Mistake('seq2seq_attention', 'init_state drops the valid lengths',
            old='return (outputs.permute(1, 0, 2), hidden_state, enc_valid_lens)',
            new='return (outputs.permute(1, 0, 2), hidden_state, None)',
            concept='Keep enc_valid_lens in the state: every decoding step masks the padding with it.'),
    Mistake('seq2seq_attention', 'returned state keeps the initial hidden state',
            old='return outputs.permute(1, 0, 2), [enc_outputs, hidden_state, enc_valid_lens]',
            new='return outputs.permute(1, 0, 2), [enc_outputs, state[1], enc_valid_lens]',
            concept='Return the hidden state the GRU gave at the last step, so that decoding can continue from it.'),
    Mistake('seq2seq_attention', "only the last step's attention weights kept",
            old='            self._attention_weights.append(self.attention.attention_weights)',
            new='            self._attention_weights = [self.attention.attention_weights]',
            concept='Append self.attention.attention_weights to a list at every step, and keep the whole list.'),
    Mistake('seq2seq_attention', 'outputs detached',
            old='outputs = self.dense(torch.cat(outputs, dim=0))',
            new='outputs = self.dense(torch.cat(outputs, dim=0).detach())',
            concept='Something cuts the graph (.detach(), .data, torch.no_grad()): every parameter must receive a gradient.'),
    Mistake('seq2seq_attention', 'dropout active in eval mode',
            old='outputs = self.dense(torch.cat(outputs, dim=0))',
            new='outputs = self.dense(nn.functional.dropout(torch.cat(outputs, dim=0), 0.5 if self.rnn.dropout else 0.0))',
            concept='Dropout stays on in eval mode: apply dropout only through nn.Dropout modules (model.eval() switches them off).'),
    Mistake('seq2seq_attention', 'bleu without the brevity penalty',
            old='score = math.exp(min(0, 1 - len_label / len_pred))',
            new='score = 1.0',
            concept='Multiply by the brevity penalty exp(min(0, 1 - len_label / len_pred)).'),
    Mistake('seq2seq_attention', 'bleu without clipping',
            old='                label_subs[" ".join(pred_tokens[i: i + n])] -= 1\n',
            new='',
            concept='Clip the matches: each n-gram of the label counts at most as often as it occurs there (decrement its count when matched).'),
    Mistake('seq2seq_attention', 'bleu with weight 1 for every n',
            old='math.pow(0.5, n))',
            new='1)',
            concept='Weight the precision of n-grams by the exponent 0.5 ** n.'),
    Mistake('seq2seq_attention', 'bleu stops at k - 1',
            old='for n in range(1, k + 1):',
            new='for n in range(1, k):',
            concept='Use the n-grams for n = 1 .. k, k included (range(1, k + 1)).'),
    Mistake('seq2seq_attention', 'bleu with add-one smoothing',
            old='math.pow(num_matches / (len_pred - n + 1),',
            new='math.pow((num_matches + 1) / (len_pred - n + 2),',
            concept='The precision of n-grams is num_matches / (len_pred - n + 1), without smoothing.'),
    Mistake('seq2seq_attention', 'bleu misses the last n-gram of the prediction',
            old='for i in range(len_pred - n + 1):',
            new='for i in range(len_pred - n):',
            concept='The prediction has len_pred - n + 1 n-grams: range(len_pred - n + 1).'),
    Mistake('seq2seq_attention', 'bleu hard-coded exact match',
            old='    pred_tokens, label_tokens = pred_seq.split(" "), label_seq.split(" ")',
            new='    return 1.0 if pred_seq == label_seq else 0.0',
            concept=''),
]
