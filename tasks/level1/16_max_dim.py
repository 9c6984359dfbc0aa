# level 1: maximum along the last dimension of a 16384x8192 matrix; eager on H200 ~0.2 ms (512 MB read)
import torch
import torch.nn as nn

ROWS = 16384
COLS = 8192


class Model(nn.Module):
    """Returns the maximum values (not the indices) of a float32 matrix along the given dimension."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.max(x, dim=self.dim)[0]


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return [1]
