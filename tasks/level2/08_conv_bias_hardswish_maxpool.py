# level 2: Conv2d 3x3 (32 -> 64) + per-channel bias + hardswish + 2x2 max-pool, 32x32x128x128, fp32; eager on H200 ~0.7 ms
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 32
in_channels = 32
out_channels = 64
height = 128
width = 128


class Model(nn.Module):
    """Unpadded 3x3 convolution, an extra learned per-channel bias, hardswish, 2x2 max pooling."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3)
        self.channel_bias = nn.Parameter(torch.randn(out_channels, 1, 1) * 0.5)
        self.pool = nn.MaxPool2d(kernel_size=2)

    def forward(self, x):
        y = self.conv(x)
        y = y + self.channel_bias
        y = F.hardswish(y)
        return self.pool(y)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]
