# level 1: depthwise 3x3 convolution (groups = channels), 128 channels at 112x112; eager on H200 ~0.3 ms (1.9 GFLOP, 411 MB)
import torch
import torch.nn as nn

BATCH = 32
CHANNELS = 128
HEIGHT = 112
WIDTH = 112
KERNEL_SIZE = 3


class Model(nn.Module):
    """Depthwise nn.Conv2d: one 3x3 filter per channel, stride 1, padding 1, with bias (float32)."""

    def __init__(self, channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=kernel_size // 2, groups=channels)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, KERNEL_SIZE]
