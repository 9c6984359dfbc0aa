# level 2: bf16 Conv2d 3x3 (64 -> 128) + ReLU + 2x2 max-pool, 64x64x128x128; eager on H200 ~0.8 ms
import torch
import torch.nn as nn

batch_size = 64
in_channels = 64
out_channels = 128
height = 128
width = 128


class Model(nn.Module):
    """Padded 3x3 convolution in bfloat16, ReLU, 2x2 max pooling."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1).to(torch.bfloat16)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        y = self.conv(x)
        y = torch.relu(y)
        return self.pool(y)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width).to(torch.bfloat16)]


def get_init_inputs():
    return [in_channels, out_channels]
