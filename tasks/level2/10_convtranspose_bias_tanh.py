# level 2: ConvTranspose2d 4x4 stride 2 (64 -> 32) + per-channel bias + tanh, 32x64x64x64 -> 32x32x128x128, fp32; eager on H200 ~0.6 ms
import torch
import torch.nn as nn

batch_size = 32
in_channels = 64
out_channels = 32
height = 64
width = 64


class Model(nn.Module):
    """2x upsampling transposed convolution, an extra learned per-channel bias, tanh."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size=4, stride=2, padding=1)
        self.channel_bias = nn.Parameter(torch.randn(out_channels, 1, 1) * 0.3)

    def forward(self, x):
        y = self.deconv(x)
        y = y - self.channel_bias
        return torch.tanh(y)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]
