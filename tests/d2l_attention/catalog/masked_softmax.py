"""Known mistakes in ``masked_softmax.py`` (d2l_attention): each a change of the reference and its concept
(see :mod:`grader.catalog`). Instructor only: the ``old`` texts are solution lines.
"""

from grader.catalog import Mistake

MISTAKES = [
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
]
