# level 2: Conv2d 3x3 (64 -> 128) + BatchNorm2d (training-mode batch statistics) + ReLU, 16x64x112x112, fp32; eager on H200 ~0.5 ms
import torch
import torch.nn as nn

batch_size = 16
in_channels = 64
out_channels = 128
height = 112
width = 112


class Model(nn.Module):
    """Padded 3x3 convolution without bias, batch normalisation, ReLU."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        y = self.conv(x)
        y = self.bn(y)
        return torch.relu(y)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]
