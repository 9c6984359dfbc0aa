# level 1: inclusive prefix sum along rows of length 2048 (32768x2048 float32); eager on H200 ~0.2 ms (512 MB)
import torch
import torch.nn as nn

ROWS = 32768
COLS = 2048


class Model(nn.Module):
    """Inclusive cumulative sum of a float32 matrix along the given dimension."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumsum(x, dim=self.dim)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return [1]
