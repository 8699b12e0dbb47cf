"""Known mistakes in ``positional_encoding.py`` (d2l_attention): each a change of the reference and its concept
(see :mod:`grader.catalog`). Instructor only: the ``old`` texts are solution lines.
"""

from grader.catalog import Mistake

MISTAKES = [
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
]
