# level 3: ResNet basic block (conv3x3-BN-ReLU-conv3x3-BN + identity, ReLU), 32x128x56x56, fp32; eager on H200 ~1.2 ms
import torch
import torch.nn as nn

batch_size = 32
channels = 128
height = 56
width = 56


class Model(nn.Module):
    """ResNet basic residual block with an identity shortcut (BatchNorm in training mode)."""

    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, kernel_size=3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(channels, channels, kernel_size=3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        out = out + x
        return self.relu(out)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels]
