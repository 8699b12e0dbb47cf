"""Known mistakes in ``mha.py`` (ch03): each a change of the reference and its concept
(see :mod:`grader.catalog`). Instructor only: the ``old`` texts are solution lines.
"""

from grader.catalog import Mistake

MISTAKES = [
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
