"""Known mistakes in ``weight_transfer.py`` (ch03): each a change of the reference and its concept
(see :mod:`grader.catalog`). Instructor only: the ``old`` texts are solution lines.
"""

from grader.catalog import Mistake

MISTAKES = [
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
]
