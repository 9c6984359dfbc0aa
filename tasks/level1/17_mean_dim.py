# level 1: mean over the leading (strided) dimension of a 1024x131072 matrix; eager on H200 ~0.2 ms (512 MB read)
import torch
import torch.nn as nn

ROWS = 1024
COLS = 131072


class Model(nn.Module):
    """Column means of a float32 matrix: mean over dimension 0."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.mean(x, dim=self.dim)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return [0]
