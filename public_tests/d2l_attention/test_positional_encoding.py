"""Public test for the positional encoding: the table's shape and its first entries."""

import math

import pytest
import torch

from grader.suite.comparisons import close, require


@pytest.mark.points(1)
@pytest.mark.probe("table", num_hiddens=32, max_len=60)
def test_table_shape_and_first_entries(probed):
    require(getattr(probed, "shape", None) == (1, 60, 32), "P should have shape (1, max_len, num_hiddens) = (1, 60, 32)",
            what="PositionalEncoding(32, 0, max_len=60).P", expected="shape (1, 60, 32)",
            actual=str(getattr(probed, "shape", type(probed))))
    close(probed[0, 0, :4], torch.tensor([0.0, 1.0, 0.0, 1.0]), what="P[0, 0, :4] (position 0: sin 0, cos 0, ...)")
    close(probed[0, 1, :2], torch.tensor([math.sin(1.0), math.cos(1.0)]), what="P[0, 1, :2] (position 1, j = 0)")
