"""The misconception catalog of ch03: known mistakes, each a small change of the reference.

Each :class:`~grader.catalog.Mistake` is a text replacement on ``solutions/ch03/<stem>.py`` (``old``
occurs exactly once) and the concept a student is told when the mistake is confirmed: run on
the same probes, it gives exactly what the student's code gave (``grader.catalog.confirm``).
A mistake without a concept (hard-coded answers, ...) is only ever localized. The same list is
the project's kept mutants: every hidden test fails on some mistake, every mistake loses points
(project_tests/test_mutants.py). Instructor only: the ``old`` texts are solution lines.
"""

from grader.catalog import Mistake

MISTAKES = [
    # -- simple_attention --------------------------------------------------------------------------
    Mistake('simple_attention', 'scores from summed vectors',
            old='    return inputs @ query\n',
            new='    return inputs.sum(dim=1) * query.sum()\n',
            concept='The score of token i is the dot product inputs[i] . query (inputs @ query), not a sum of the vectors.'),
    Mistake('simple_attention', 'hard-coded textbook scores',
            old='    return inputs @ query\n',
            new='    return torch.tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])\n',
            concept=''),
    Mistake('simple_attention', 'divide by the largest score',
            old='    return scores / scores.sum()\n',
            new='    return scores / scores.max()\n',
            concept='Normalise by dividing each score by the sum of all scores.'),
    Mistake('simple_attention', 'softmax without exp',
            old='    return torch.exp(x) / torch.exp(x).sum(dim=0)\n',
            new='    return x / x.sum(dim=0)\n',
            concept='Softmax divides exp(x) by the sum of exp(x).'),
    Mistake('simple_attention', 'softmax summed over every entry',
            old='    return torch.exp(x) / torch.exp(x).sum(dim=0)\n',
            new='    return torch.exp(x) / torch.exp(x).sum()\n',
            concept='Sum along dimension 0 only, not over every entry.'),
    Mistake('simple_attention', 'context vector is the plain mean',
            old='    return attn_weights @ inputs\n',
            new='    return inputs.mean(dim=0)\n',
            concept='Weight each row of inputs by its attention weight and add the rows up (attn_weights @ inputs).'),
    Mistake('simple_attention', 'scores of the features, not the tokens',
            old='    return inputs @ inputs.T\n',
            new='    return inputs.T @ inputs\n',
            concept='All scores at once: inputs @ inputs.T is (num_tokens, num_tokens); inputs.T @ inputs compares features, not tokens.'),
    Mistake('simple_attention', 'softmax over dim 0',
            old='    return torch.softmax(all_attention_scores(inputs), dim=-1)\n',
            new='    return torch.softmax(all_attention_scores(inputs), dim=0)\n',
            concept='Softmax runs over the wrong dimension: use dim=-1, so that each row (one query) sums to 1.'),
    Mistake('simple_attention', 'weights transposed before the product',
            old='    return all_attention_weights(inputs) @ inputs\n',
            new='    return all_attention_weights(inputs).T @ inputs\n',
            concept='Multiply the weights by the inputs (weights @ inputs) without transposing the weights.'),
    # -- self_attention_v1 -------------------------------------------------------------------------
    Mistake('self_attention_v1', 'hard-coded textbook output',
            old=('        keys = x @ self.W_key\n'
                 '        queries = x @ self.W_query\n'
                 '        values = x @ self.W_value\n'
                 '        attn_scores = queries @ keys.T  # (num_tokens, num_tokens)\n'
                 '        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n'
                 '        return attn_weights @ values'),
            new=('        return torch.tensor([[0.2996, 0.8053], [0.3061, 0.8210], [0.3058, 0.8203],\n'
                 '                             [0.2948, 0.7939], [0.2927, 0.7891], [0.2990, 0.8040]])'),
            concept=''),
    Mistake('self_attention_v1', 'scores not scaled by sqrt(d_k)',
            old='torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)',
            new='torch.softmax(attn_scores, dim=-1)',
            concept='The scores are not scaled: divide them by sqrt(d_k) (keys.shape[-1] ** 0.5) before softmax.'),
    Mistake('self_attention_v1', 'softmax over dim 0',
            old='torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)',
            new='torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=0)',
            concept='Softmax runs over the wrong dimension: use dim=-1, so that each row (one query) sums to 1.'),
    Mistake('self_attention_v1', 'keys and queries swapped',
            old='attn_scores = queries @ keys.T',
            new='attn_scores = keys @ queries.T',
            concept='Queries and keys are swapped: the scores are queries @ keys.T (row i: query i against every key).'),
    Mistake('self_attention_v1', 'W_key created before W_query',
            old=('        self.W_query = nn.Parameter(torch.rand(d_in, d_out))\n'
                 '        self.W_key = nn.Parameter(torch.rand(d_in, d_out))\n'),
            new=('        self.W_key = nn.Parameter(torch.rand(d_in, d_out))\n'
                 '        self.W_query = nn.Parameter(torch.rand(d_in, d_out))\n'),
            concept='Create the layers in the order the docstring gives: the order decides which random initial weights each one gets.'),
    Mistake('self_attention_v1', 'W_value drawn with torch.randn',
            old='self.W_value = nn.Parameter(torch.rand(d_in, d_out))',
            new='self.W_value = nn.Parameter(torch.randn(d_in, d_out))',
            concept='Initialise each matrix with torch.rand(d_in, d_out) (uniform in [0, 1)) as the textbook does, not torch.randn.'),
    Mistake('self_attention_v1', 'W_key a plain tensor, not an nn.Parameter',
            old='self.W_key = nn.Parameter(torch.rand(d_in, d_out))',
            new='self.W_key = torch.rand(d_in, d_out)',
            concept='Wrap each matrix in nn.Parameter(...): then the module registers it and training updates it.'),
    Mistake('self_attention_v1', 'values computed from a detached W_value',
            old='values = x @ self.W_value',
            new='values = x @ self.W_value.detach()',
            concept='Something cuts the graph (.detach(), .data, torch.no_grad()): every parameter must receive a gradient.'),
    Mistake('self_attention_v1', 'values computed with W_key',
            old='values = x @ self.W_value',
            new='values = x @ self.W_key',
            concept='The values come from W_value: values = x @ self.W_value.'),
    # -- self_attention_v2 -------------------------------------------------------------------------
    Mistake('self_attention_v2', 'hard-coded textbook output',
            old=('        keys = self.W_key(x)\n'
                 '        queries = self.W_query(x)\n'
                 '        values = self.W_value(x)\n'
                 '        attn_scores = queries @ keys.T  # (num_tokens, num_tokens)\n'
                 '        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n'
                 '        return attn_weights @ values'),
            new=('        return torch.tensor([[-0.0739, 0.0713], [-0.0748, 0.0703], [-0.0749, 0.0702],\n'
                 '                             [-0.0760, 0.0685], [-0.0763, 0.0679], [-0.0754, 0.0693]])'),
            concept=''),
    Mistake('self_attention_v2', 'scores not scaled by sqrt(d_k)',
            old='torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)',
            new='torch.softmax(attn_scores, dim=-1)',
            concept='The scores are not scaled: divide them by sqrt(d_k) (keys.shape[-1] ** 0.5) before softmax.'),
    Mistake('self_attention_v2', 'softmax over dim 0',
            old='torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)',
            new='torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=0)',
            concept='Softmax runs over the wrong dimension: use dim=-1, so that each row (one query) sums to 1.'),
    Mistake('self_attention_v2', 'keys and queries swapped',
            old='attn_scores = queries @ keys.T',
            new='attn_scores = keys @ queries.T',
            concept='Queries and keys are swapped: the scores are queries @ keys.T (row i: query i against every key).'),
    Mistake('self_attention_v2', 'W_value created before W_key',
            old=('        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n'
                 '        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n'),
            new=('        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n'
                 '        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n'),
            concept='Create the layers in the order the docstring gives: the order decides which random initial weights each one gets.'),
    Mistake('self_attention_v2', 'W_key created before W_query',
            old=('        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n'
                 '        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n'),
            new=('        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n'
                 '        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n'),
            concept='Create the layers in the order the docstring gives: the order decides which random initial weights each one gets.'),
    Mistake('self_attention_v2', 'qkv_bias ignored by W_query',
            old='self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)',
            new='self.W_query = nn.Linear(d_in, d_out, bias=False)',
            concept='Pass bias=qkv_bias to each of the query, key and value nn.Linear layers.'),
    Mistake('self_attention_v2', 'W_value always has a bias',
            old='self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)',
            new='self.W_value = nn.Linear(d_in, d_out, bias=True)',
            concept='Pass bias=qkv_bias to each of the query, key and value nn.Linear layers.'),
    Mistake('self_attention_v2', 'values from a detached layer output',
            old='values = self.W_value(x)',
            new='values = self.W_value(x).detach()',
            concept='Something cuts the graph (.detach(), .data, torch.no_grad()): every parameter must receive a gradient.'),
    # -- weight_transfer ---------------------------------------------------------------------------
    Mistake('weight_transfer', 'hard-coded textbook weights (seed 123)',
            old=('    sa_v1.W_query.data = sa_v2.W_query.weight.T  # (d_in, d_out)\n'
                 '    sa_v1.W_key.data = sa_v2.W_key.weight.T  # (d_in, d_out)\n'
                 '    sa_v1.W_value.data = sa_v2.W_value.weight.T  # (d_in, d_out)'),
            new=('    sa_v1.W_query.data = torch.tensor([[-0.23542964458465576, 0.21772661805152893], [0.019124476239085197, -0.491934210062027], [-0.28674593567848206, 0.423223078250885]])\n'
                 '    sa_v1.W_key.data = torch.tensor([[-0.4196414053440094, 0.2614781856536865], [-0.45901766419410706, -0.21332639455795288], [-0.3648201823234558, 0.21605217456817627]])\n'
                 '    sa_v1.W_value.data = torch.tensor([[-0.49001413583755493, -0.1134607195854187], [-0.35029205679893494, -0.440439373254776], [-0.21198919415473938, 0.37804362177848816]])'),
            concept=''),
    Mistake('weight_transfer', 'weights not transposed',
            old=('    sa_v1.W_query.data = sa_v2.W_query.weight.T  # (d_in, d_out)\n'
                 '    sa_v1.W_key.data = sa_v2.W_key.weight.T  # (d_in, d_out)\n'
                 '    sa_v1.W_value.data = sa_v2.W_value.weight.T  # (d_in, d_out)'),
            new=('    sa_v1.W_query.data = sa_v2.W_query.weight  # (d_in, d_out)\n'
                 '    sa_v1.W_key.data = sa_v2.W_key.weight  # (d_in, d_out)\n'
                 '    sa_v1.W_value.data = sa_v2.W_value.weight  # (d_in, d_out)'),
            concept='nn.Linear keeps its weight as (d_out, d_in): give each v1 matrix the transpose, sa_v2.W_query.weight.T.'),
    Mistake('weight_transfer', 'W_query and W_key swapped',
            old=('    sa_v1.W_query.data = sa_v2.W_query.weight.T  # (d_in, d_out)\n'
                 '    sa_v1.W_key.data = sa_v2.W_key.weight.T  # (d_in, d_out)\n'
                 '    sa_v1.W_value.data = sa_v2.W_value.weight.T  # (d_in, d_out)'),
            new=('    sa_v1.W_query.data = sa_v2.W_key.weight.T  # (d_in, d_out)\n'
                 '    sa_v1.W_key.data = sa_v2.W_query.weight.T  # (d_in, d_out)\n'
                 '    sa_v1.W_value.data = sa_v2.W_value.weight.T  # (d_in, d_out)'),
            concept='Copy each v2 layer into the v1 matrix of the same name (W_query into W_query, W_key into W_key).'),
    Mistake('weight_transfer', 'copied from v1 into v2',
            old=('    sa_v1.W_query.data = sa_v2.W_query.weight.T  # (d_in, d_out)\n'
                 '    sa_v1.W_key.data = sa_v2.W_key.weight.T  # (d_in, d_out)\n'
                 '    sa_v1.W_value.data = sa_v2.W_value.weight.T  # (d_in, d_out)'),
            new=('    sa_v2.W_query.weight.data = sa_v1.W_query.T\n'
                 '    sa_v2.W_key.weight.data = sa_v1.W_key.T\n'
                 '    sa_v2.W_value.weight.data = sa_v1.W_value.T'),
            concept='Copy from sa_v2 into sa_v1 (the first argument receives the weights), and leave sa_v2 unchanged.'),
    Mistake('weight_transfer', 'W_value not copied',
            old='    sa_v1.W_value.data = sa_v2.W_value.weight.T  # (d_in, d_out)\n',
            new='',
            concept='Copy all three matrices: W_query, W_key and W_value.'),
    Mistake('weight_transfer', 'W_query replaced by a plain tensor (no longer a parameter)',
            old='    sa_v1.W_query.data = sa_v2.W_query.weight.T  # (d_in, d_out)\n',
            new=('    del sa_v1.W_query\n'
                 '    sa_v1.W_query = sa_v2.W_query.weight.T.detach()\n'),
            concept="Replace the parameters' data (sa_v1.W_query.data = ...), not the attributes: they must stay nn.Parameter objects."),
    # -- causal ------------------------------------------------------------------------------------
    Mistake('causal', 'hard-coded textbook values: CausalAttention.forward returns the printed seed-123 output',
            old='        return context_vec\n',
            new='        return torch.tensor([[-0.4519, 0.2216], [-0.5874, 0.0058], [-0.6300, -0.0632], [-0.5675, -0.0843], [-0.5526, -0.0981], [-0.5299, -0.1081]]).repeat(b, 1, 1)\n',
            concept=''),
    Mistake('causal', 'hard-coded textbook values: causal_attention_weights returns the printed seed-789 weights',
            old='    return torch.softmax(masked / d_k**0.5, dim=-1)\n',
            new='    return torch.tensor([[1.0, 0, 0, 0, 0, 0], [0.5517, 0.4483, 0, 0, 0, 0], [0.3800, 0.3097, 0.3103, 0, 0, 0], [0.2758, 0.2460, 0.2462, 0.2319, 0, 0], [0.2175, 0.1983, 0.1984, 0.1888, 0.1971, 0], [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529]])\n',
            concept=''),
    Mistake('causal', 'hard-coded textbook values: mask_and_renormalize returns the printed seed-789 weights',
            old='    return masked / row_sums\n',
            new='    return torch.tensor([[1.0, 0, 0, 0, 0, 0], [0.5517, 0.4483, 0, 0, 0, 0], [0.3800, 0.3097, 0.3103, 0, 0, 0], [0.2758, 0.2460, 0.2462, 0.2319, 0, 0], [0.2175, 0.1983, 0.1984, 0.1888, 0.1971, 0], [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529]])\n',
            concept=''),
    Mistake('causal', 'hard-coded textbook values: simple_causal_mask always builds the 6x6 mask',
            old='    return torch.tril(torch.ones(context_length, context_length))\n',
            new='    return torch.tril(torch.ones(6, 6))\n',
            concept=''),
    Mistake('causal', 'simple_causal_mask marks the hidden positions (triu) instead of the allowed ones',
            old='    return torch.tril(torch.ones(context_length, context_length))\n',
            new='    return torch.triu(torch.ones(context_length, context_length), diagonal=1)\n',
            concept='simple_causal_mask marks the allowed positions: ones on and below the diagonal (torch.tril), not the hidden ones.'),
    Mistake('causal', 'mask_and_renormalize does not renormalise the rows',
            old='    return masked / row_sums\n',
            new='    return masked\n',
            concept='Divide each row by its sum after masking, so that the rows sum to 1 again.'),
    Mistake('causal', 'mask_and_renormalize sums over dim 1 (works only for 2-D weights)',
            old='row_sums = masked.sum(dim=-1, keepdim=True)',
            new='row_sums = masked.sum(dim=1, keepdim=True)',
            concept='Sum over the last dimension (dim=-1, keepdim=True), so it works for any number of batch dimensions.'),
    Mistake('causal', 'mask_and_renormalize masks its input in place',
            old='masked = attn_weights * mask',
            new='masked = attn_weights.mul_(mask)',
            concept='Multiply into a new tensor (attn_weights * mask), not in place (mul_, *=, masked_fill_).'),
    Mistake('causal', 'causal_attention_weights without the sqrt(d_k) scaling',
            old='torch.softmax(masked / d_k**0.5, dim=-1)',
            new='torch.softmax(masked, dim=-1)',
            concept='The scores are not scaled: divide them by sqrt(d_k) (keys.shape[-1] ** 0.5) before softmax.'),
    Mistake('causal', 'causal_attention_weights softmax over the wrong dimension',
            old='torch.softmax(masked / d_k**0.5, dim=-1)',
            new='torch.softmax(masked / d_k**0.5, dim=-2)',
            concept='Softmax runs over the wrong dimension: use dim=-1, so that each row (one query) sums to 1.'),
    Mistake('causal', 'causal_attention_weights masks the diagonal too (diagonal=0)',
            old='device=attn_scores.device), diagonal=1',
            new='device=attn_scores.device), diagonal=0',
            concept='The diagonal is masked too: a token must attend to itself. Mask only the positions above the diagonal (torch.triu(..., diagonal=1)).'),
    Mistake('causal', 'causal_attention_weights fills the future with 0 instead of -inf',
            old='masked = attn_scores.masked_fill(mask, -torch.inf)',
            new='masked = attn_scores.masked_fill(mask, 0.0)',
            concept='The future is filled with 0, not -inf: exp(0) = 1 still gives future tokens weight.'),
    Mistake('causal', 'causal_attention_weights fills its input in place (masked_fill_)',
            old='masked = attn_scores.masked_fill(mask, -torch.inf)',
            new='masked = attn_scores.masked_fill_(mask, -torch.inf)',
            concept="Use the out-of-place attn_scores.masked_fill(...), not masked_fill_ (which changes the caller's tensor)."),
    Mistake('causal', 'CausalAttention creates W_key before W_query',
            old=('        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n'
                 '        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n'),
            new=('        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n'
                 '        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n'),
            concept='Create the layers in the order the docstring gives: the order decides which random initial weights each one gets.'),
    Mistake('causal', 'CausalAttention ignores qkv_bias',
            old='        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n',
            new='        self.W_value = nn.Linear(d_in, d_out, bias=False)\n',
            concept='Pass bias=qkv_bias to each of the query, key and value nn.Linear layers.'),
    Mistake('causal', 'CausalAttention without the sqrt(d_k) scaling',
            old='torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)',
            new='torch.softmax(attn_scores, dim=-1)',
            concept='The scores are not scaled: divide them by sqrt(d_k) (keys.shape[-1] ** 0.5) before softmax.'),
    Mistake('causal', 'CausalAttention without the mask',
            old=('        attn_scores.masked_fill_(\n'
                 '            self.mask.bool()[:num_tokens, :num_tokens], -torch.inf\n'
                 '        )\n'),
            new='',
            concept='The future is not masked: fill the scores above the diagonal with -inf before softmax.'),
    Mistake('causal', 'CausalAttention fills the future with 0 instead of -inf',
            old='            self.mask.bool()[:num_tokens, :num_tokens], -torch.inf\n',
            new='            self.mask.bool()[:num_tokens, :num_tokens], 0.0\n',
            concept='The future is filled with 0, not -inf: exp(0) = 1 still gives future tokens weight.'),
    Mistake('causal', 'CausalAttention softmax over the wrong dimension',
            old='torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)',
            new='torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=1)',
            concept='Softmax runs over the wrong dimension: use dim=-1, so that each row (one query) sums to 1.'),
    Mistake('causal', 'CausalAttention masks the diagonal too (diagonal=0)',
            old='"mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)',
            new='"mask", torch.triu(torch.ones(context_length, context_length), diagonal=0)',
            concept='The diagonal is masked too: a token must attend to itself. Mask only the positions above the diagonal (torch.triu(..., diagonal=1)).'),
    Mistake('causal', 'CausalAttention does not slice the mask to the number of tokens',
            old='self.mask.bool()[:num_tokens, :num_tokens]',
            new='self.mask.bool()',
            concept='The mask is built for context_length tokens; for a shorter input use only its top-left part, self.mask.bool()[:num_tokens, :num_tokens].'),
    Mistake('causal', 'CausalAttention applies dropout to the context vectors instead of the weights',
            old=('        attn_weights = self.dropout(attn_weights)\n'
                 '        context_vec = attn_weights @ values'),
            new='        context_vec = self.dropout(attn_weights @ values)',
            concept='Dropout is applied to the context vectors; apply self.dropout to the attention weights (after softmax), then multiply by the values.', random=True),
    Mistake('causal', 'CausalAttention keeps dropout on in eval mode (F.dropout with training=True)',
            old='        attn_weights = self.dropout(attn_weights)\n',
            new='        attn_weights = nn.functional.dropout(attn_weights, self.dropout.p, training=True)\n',
            concept='Dropout stays on in eval mode: use the nn.Dropout module self.dropout (model.eval() switches it off), not F.dropout(..., training=True).'),
    Mistake('causal', 'CausalAttention keeps the mask as a plain attribute, not a buffer',
            old=('        self.register_buffer(\n'
                 '            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)\n'
                 '        )\n'),
            new='        self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)\n',
            concept="Register the mask with self.register_buffer('mask', ...): a plain attribute does not move with .to(device) nor go into the state_dict."),
    Mistake('causal', 'CausalAttention detaches the values (no gradient to W_value)',
            old='        values = self.W_value(x)  # (b, num_tokens, d_out)\n',
            new='        values = self.W_value(x).detach()  # (b, num_tokens, d_out)\n',
            concept='Something cuts the graph (.detach(), .data, torch.no_grad()): every parameter must receive a gradient.'),
    # -- mha ---------------------------------------------------------------------------------------
    Mistake('mha', 'hard-coded textbook values: MultiHeadAttention.forward returns the printed seed-123 output',
            old='        return self.out_proj(context_vec)  # (b, num_tokens, d_out)\n',
            new='        return torch.tensor([[0.3190, 0.4858], [0.2943, 0.3897], [0.2856, 0.3593], [0.2693, 0.3873], [0.2639, 0.3928], [0.2575, 0.4028]]).repeat(b, 1, 1)\n',
            concept=''),
    Mistake('mha', 'hard-coded textbook values: the wrapper returns the printed seed-123 output',
            old='        return torch.cat([head(x) for head in self.heads], dim=-1)',
            new='        return torch.tensor([[-0.4519, 0.2216, 0.4772, 0.1063], [-0.5874, 0.0058, 0.5891, 0.3257], [-0.6300, -0.0632, 0.6202, 0.3860], [-0.5675, -0.0843, 0.5478, 0.3589], [-0.5526, -0.0981, 0.5321, 0.3428], [-0.5299, -0.1081, 0.5077, 0.3493]]).repeat(x.shape[0], 1, 1)',
            concept=''),
    Mistake('mha', 'hard-coded textbook values: exercise_3_2_wrapper builds the textbook sizes (d_in=3, context_length=6)',
            old='    return MultiHeadAttentionWrapper(d_in, 1, context_length, dropout, num_heads=2)\n',
            new='    return MultiHeadAttentionWrapper(3, 1, 6, dropout, num_heads=2)\n',
            concept=''),
    Mistake('mha', 'wrapper concatenates the heads in reverse order',
            old='torch.cat([head(x) for head in self.heads], dim=-1)',
            new='torch.cat([head(x) for head in reversed(self.heads)], dim=-1)',
            concept='Concatenate the heads in head order: torch.cat([head(x) for head in self.heads], dim=-1).'),
    Mistake('mha', 'wrapper shares one CausalAttention between all heads ([head] * num_heads)',
            old=('                for _ in range(num_heads)\n'
                 '            ]\n'),
            new=('            ]\n'
                 '            * num_heads\n'),
            concept='Create a new CausalAttention for every head ([CausalAttention(...) for _ in range(num_heads)]), not one head repeated.'),
    Mistake('mha', 'wrapper keeps its heads in a plain list, not an nn.ModuleList',
            old='        self.heads = nn.ModuleList(\n',
            new='        self.heads = list(\n',
            concept='Keep the heads in an nn.ModuleList: a plain list does not register their parameters.'),
    Mistake('mha', 'wrapper does not pass dropout and qkv_bias on to its heads',
            old='                CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)\n',
            new='                CausalAttention(d_in, d_out, context_length, 0.0)\n',
            concept='Pass dropout and qkv_bias on to every CausalAttention head.'),
    Mistake('mha', 'MultiHeadAttention without the check that d_out is divisible by num_heads',
            old='        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"\n',
            new='',
            concept='Start __init__ with assert d_out % num_heads == 0, "d_out must be divisible by num_heads".'),
    Mistake('mha', 'MultiHeadAttention creates out_proj before the query, key and value layers',
            old=('        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n'
                 '        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n'
                 '        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n'
                 '        self.out_proj = nn.Linear(d_out, d_out)\n'),
            new=('        self.out_proj = nn.Linear(d_out, d_out)\n'
                 '        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n'
                 '        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n'
                 '        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n'),
            concept='Create the layers in the order the docstring gives: the order decides which random initial weights each one gets.'),
    Mistake('mha', 'MultiHeadAttention creates W_value before W_key',
            old=('        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n'
                 '        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n'),
            new=('        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n'
                 '        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n'),
            concept='Create the layers in the order the docstring gives: the order decides which random initial weights each one gets.'),
    Mistake('mha', 'MultiHeadAttention ignores qkv_bias',
            old=('        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n'
                 '        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n'
                 '        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n'),
            new=('        self.W_query = nn.Linear(d_in, d_out, bias=False)\n'
                 '        self.W_key = nn.Linear(d_in, d_out, bias=False)\n'
                 '        self.W_value = nn.Linear(d_in, d_out, bias=False)\n'),
            concept='Pass bias=qkv_bias to each of the query, key and value nn.Linear layers.'),
    Mistake('mha', 'MultiHeadAttention without the sqrt(head_dim) scaling',
            old='torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)',
            new='torch.softmax(attn_scores, dim=-1)',
            concept='The scores are not scaled: divide them by sqrt(head_dim) (keys.shape[-1] ** 0.5) before softmax.'),
    Mistake('mha', 'MultiHeadAttention scales by sqrt(d_out) instead of sqrt(head_dim)',
            old='torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)',
            new='torch.softmax(attn_scores / self.d_out ** 0.5, dim=-1)',
            concept='Scale by the size of one head, sqrt(head_dim), not by sqrt(d_out).'),
    Mistake('mha', 'MultiHeadAttention without the mask',
            old='        attn_scores.masked_fill_(mask_bool, -torch.inf)\n',
            new='',
            concept='The future is not masked: fill the scores above the diagonal with -inf before softmax.'),
    Mistake('mha', 'MultiHeadAttention does not slice the mask to the number of tokens',
            old='mask_bool = self.mask.bool()[:num_tokens, :num_tokens]',
            new='mask_bool = self.mask.bool()',
            concept='The mask is built for context_length tokens; for a shorter input use only its top-left part, self.mask.bool()[:num_tokens, :num_tokens].'),
    Mistake('mha', 'MultiHeadAttention masks the diagonal too (diagonal=0)',
            old='"mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)',
            new='"mask", torch.triu(torch.ones(context_length, context_length), diagonal=0)',
            concept='The diagonal is masked too: a token must attend to itself. Mask only the positions above the diagonal (torch.triu(..., diagonal=1)).'),
    Mistake('mha', 'MultiHeadAttention splits the heads with a view straight to (b, num_heads, num_tokens, head_dim)',
            old=('        keys = keys.transpose(1, 2)  # (b, num_heads, num_tokens, head_dim)\n'
                 '        queries = queries.transpose(1, 2)  # (b, num_heads, num_tokens, head_dim)\n'
                 '        values = values.transpose(1, 2)  # (b, num_heads, num_tokens, head_dim)\n'),
            new=('        keys = keys.reshape(b, self.num_heads, num_tokens, self.head_dim)\n'
                 '        queries = queries.reshape(b, self.num_heads, num_tokens, self.head_dim)\n'
                 '        values = values.reshape(b, self.num_heads, num_tokens, self.head_dim)\n'),
            concept='The heads are not split correctly: view the projections as (b, num_tokens, num_heads, head_dim), then transpose(1, 2); a view straight to (b, num_heads, num_tokens, head_dim) mixes tokens and heads.'),
    Mistake('mha', 'MultiHeadAttention merges the heads without transposing back',
            old='context_vec = (attn_weights @ values).transpose(1, 2)',
            new='context_vec = (attn_weights @ values)',
            concept='The heads are not merged correctly: transpose(1, 2) back to (b, num_tokens, num_heads, head_dim) before the view to (b, num_tokens, d_out).'),
    Mistake('mha', 'MultiHeadAttention forgets out_proj',
            old='        return self.out_proj(context_vec)  # (b, num_tokens, d_out)\n',
            new='        return context_vec\n',
            concept="Apply self.out_proj to the merged heads: it mixes the heads' outputs."),
    Mistake('mha', 'MultiHeadAttention applies dropout to the context vectors instead of the weights',
            old=('        attn_weights = self.dropout(attn_weights)\n'
                 '\n'
                 '        context_vec = (attn_weights @ values).transpose(1, 2)  # (b, num_tokens, num_heads, head_dim)\n'
                 '        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)  # (b, num_tokens, d_out)\n'),
            new=('        context_vec = (attn_weights @ values).transpose(1, 2)\n'
                 '        context_vec = self.dropout(context_vec.contiguous().view(b, num_tokens, self.d_out))\n'),
            concept='Dropout is applied to the context vectors; apply self.dropout to the attention weights (after softmax), then multiply by the values.', random=True),
    Mistake('mha', 'MultiHeadAttention keeps dropout on in eval mode (F.dropout with training=True)',
            old='        attn_weights = self.dropout(attn_weights)\n',
            new='        attn_weights = nn.functional.dropout(attn_weights, self.dropout.p, training=True)\n',
            concept='Dropout stays on in eval mode: use the nn.Dropout module self.dropout (model.eval() switches it off), not F.dropout(..., training=True).'),
    Mistake('mha', 'MultiHeadAttention keeps the mask as a plain attribute, not a buffer',
            old=('        self.register_buffer(\n'
                 '            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)\n'
                 '        )\n'),
            new='        self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)\n',
            concept="Register the mask with self.register_buffer('mask', ...): a plain attribute does not move with .to(device) nor go into the state_dict."),
    Mistake('mha', 'MultiHeadAttention detaches the keys (no gradient to W_key)',
            old='        keys = self.W_key(x)  # (b, num_tokens, d_out)\n',
            new='        keys = self.W_key(x).detach()  # (b, num_tokens, d_out)\n',
            concept='Something cuts the graph (.detach(), .data, torch.no_grad()): every parameter must receive a gradient.'),
    Mistake('mha', 'Exercise 3.2 keeps d_out=2 per head (output vectors of size 4)',
            old='    return MultiHeadAttentionWrapper(d_in, 1, context_length, dropout, num_heads=2)\n',
            new='    return MultiHeadAttentionWrapper(d_in, 2, context_length, dropout, num_heads=2)\n',
            concept='With num_heads=2 the wrapper concatenates 2 heads of d_out features each: give each head d_out=1 to get 2-dimensional output vectors.'),
    Mistake('mha', 'Exercise 3.2 ignores the dropout argument',
            old='    return MultiHeadAttentionWrapper(d_in, 1, context_length, dropout, num_heads=2)\n',
            new='    return MultiHeadAttentionWrapper(d_in, 1, context_length, 0.0, num_heads=2)\n',
            concept='Pass the dropout argument on to the wrapper.'),
    Mistake('mha', 'Exercise 3.3 with qkv_bias=True',
            old='    return MultiHeadAttention(768, 768, 1024, 0.0, num_heads=12)\n',
            new='    return MultiHeadAttention(768, 768, 1024, 0.0, num_heads=12, qkv_bias=True)\n',
            concept="GPT-2 small's attention here uses the default qkv_bias=False (out_proj keeps its bias)."),
    Mistake('mha', 'Exercise 3.3 with 6 heads (same parameter count)',
            old='    return MultiHeadAttention(768, 768, 1024, 0.0, num_heads=12)\n',
            new='    return MultiHeadAttention(768, 768, 1024, 0.0, num_heads=6)\n',
            concept='GPT-2 small has 12 attention heads.'),
]
