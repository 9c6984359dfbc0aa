# level 2: Conv2d 3x3 (16 -> 64) + GroupNorm(8 groups) + mean over H and W, 64x16x128x128, fp32; eager on H200 ~0.8 ms
import torch
import torch.nn as nn

batch_size = 64
in_channels = 16
out_channels = 64
num_groups = 8
height = 128
width = 128


class Model(nn.Module):
    """3x3 convolution, group normalisation, then the per-channel average over the spatial dimensions."""

    def __init__(self, in_channels, out_channels, num_groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3)
        self.gn = nn.GroupNorm(num_groups, out_channels)

    def forward(self, x):
        y = self.conv(x)
        y = self.gn(y)
        return y.mean(dim=(2, 3))


def get_inputs():
    # per-image, per-channel offsets give every image its own channel means, so the
    # spatial average carries information about the input and not only about the weights
    offsets = torch.randn(batch_size, in_channels, 1, 1) * 2.0
    return [torch.randn(batch_size, in_channels, height, width) + offsets]


def get_init_inputs():
    return [in_channels, out_channels, num_groups]
