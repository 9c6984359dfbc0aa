# level 1: hardtanh clamp to [-2, 2] on 64M float32 elements; eager on H200 ~0.2 ms (512 MB)
import torch
import torch.nn as nn
import torch.nn.functional as F

ROWS = 16384
COLS = 4096


class Model(nn.Module):
    """Elementwise hardtanh: clips a float32 matrix to the interval [min_val, max_val]."""

    def __init__(self, min_val, max_val):
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, x):
        return F.hardtanh(x, min_val=self.min_val, max_val=self.max_val)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return [-2.0, 2.0]
