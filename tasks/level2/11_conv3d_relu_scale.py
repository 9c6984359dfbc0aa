# level 2: Conv3d 3x3x3 (8 -> 32) + ReLU + per-channel scale, 16x8x32x64x64, fp32; eager on H200 ~1.5 ms
import torch
import torch.nn as nn

batch_size = 16
in_channels = 8
out_channels = 32
depth = 32
height = 64
width = 64


class Model(nn.Module):
    """Padded 3D convolution, ReLU, then multiplication by a learned per-channel scale."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size=3, padding=1)
        self.scale = nn.Parameter(1.0 + 0.5 * torch.randn(out_channels, 1, 1, 1))

    def forward(self, x):
        y = self.conv(x)
        y = torch.relu(y)
        return y * self.scale


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]
