# level 1: sum over the middle dimension of a 128x4096x256 tensor; eager on H200 ~0.2 ms (512 MB read)
import torch
import torch.nn as nn

BATCH = 128
DIM1 = 4096
DIM2 = 256


class Model(nn.Module):
    """Sums a float32 (batch, dim1, dim2) tensor over the given dimension, keeping it as size 1."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, DIM1, DIM2)]


def get_init_inputs():
    return [1]
