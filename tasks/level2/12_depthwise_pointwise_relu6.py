# level 2: depthwise Conv2d 3x3 (128 ch) + pointwise Conv2d 1x1 (128 -> 256) + ReLU6, 16x128x112x112, fp32; eager on H200 ~1.0 ms
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 16
channels = 128
out_channels = 256
height = 112
width = 112


class Model(nn.Module):
    """Depthwise-separable convolution (per-channel 3x3 then 1x1 mixing) followed by ReLU6."""

    def __init__(self, channels, out_channels):
        super().__init__()
        self.depthwise = nn.Conv2d(channels, channels, kernel_size=3, padding=1, groups=channels)
        self.pointwise = nn.Conv2d(channels, out_channels, kernel_size=1)

    def forward(self, x):
        y = self.depthwise(x)
        y = self.pointwise(y)
        return F.relu6(y)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, out_channels]
