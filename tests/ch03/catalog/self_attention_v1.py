"""Known mistakes in ``self_attention_v1.py`` (ch03): each a change of the reference and its concept
(see :mod:`grader.catalog`). Instructor only: the ``old`` texts are solution lines.
"""

from grader.catalog import Mistake

MISTAKES = [
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
]
