"""Known mistakes in ``self_attention_v2.py`` (ch03): each a change of the reference and its concept
(see :mod:`grader.catalog`). Instructor only: the ``old`` texts are solution lines.
"""

from grader.catalog import Mistake

MISTAKES = [
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
]
