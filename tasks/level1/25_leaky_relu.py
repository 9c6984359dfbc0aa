# level 1: leaky ReLU with slope 0.2 on 64M float32 elements; eager on H200 ~0.2 ms (512 MB)
import torch
import torch.nn as nn
import torch.nn.functional as F

ROWS = 16384
COLS = 4096


class Model(nn.Module):
    """Elementwise leaky ReLU: x for x > 0, negative_slope * x otherwise (float32)."""

    def __init__(self, negative_slope):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        return F.leaky_relu(x, negative_slope=self.negative_slope)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return [0.2]
