# level 3: ResNet bottleneck block, stride 2, 1x1 conv + BN downsample shortcut, 32x256x56x56 -> 32x512x28x28, fp32; eager on H200 ~2.0 ms
import torch
import torch.nn as nn

batch_size = 32
in_channels = 256
mid_channels = 128
expansion = 4
stride = 2
height = 56
width = 56


class Model(nn.Module):
    """Bottleneck residual block (1x1 reduce, strided 3x3, 1x1 expand) with a projection shortcut."""

    def __init__(self, in_channels, mid_channels, expansion, stride):
        super().__init__()
        out_channels = mid_channels * expansion
        self.conv1 = nn.Conv2d(in_channels, mid_channels, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm2d(mid_channels)
        self.conv2 = nn.Conv2d(mid_channels, mid_channels, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(mid_channels)
        self.conv3 = nn.Conv2d(mid_channels, out_channels, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU()
        self.downsample = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=stride, bias=False),
            nn.BatchNorm2d(out_channels),
        )

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        shortcut = self.downsample(x)
        return self.relu(out + shortcut)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, mid_channels, expansion, stride]
