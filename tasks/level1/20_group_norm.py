# level 1: group norm (8 groups of 16 channels) on 32x128x112x112; eager on H200 ~0.3 ms (411 MB)
import torch
import torch.nn as nn

BATCH = 32
CHANNELS = 128
GROUPS = 8
HEIGHT = 112
WIDTH = 112


class Model(nn.Module):
    """nn.GroupNorm with per-channel affine parameters (randomly initialised), float32 NCHW input."""

    def __init__(self, num_groups, channels):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups, channels, eps=1e-5)
        with torch.no_grad():
            self.gn.weight.normal_(1.0, 0.25)
            self.gn.bias.normal_(0.0, 0.25)

    def forward(self, x):
        return self.gn(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [GROUPS, CHANNELS]
