# level 3: MobileNetV2 inverted residual (1x1 expand x6, depthwise 3x3, 1x1 project, residual), 32x64x56x56, fp32; eager on H200 ~1.5 ms
import torch
import torch.nn as nn

batch_size = 32
channels = 64
expand_ratio = 6
height = 56
width = 56


class Model(nn.Module):
    """Inverted residual block: pointwise expansion, depthwise conv, linear bottleneck, identity shortcut."""

    def __init__(self, channels, expand_ratio):
        super().__init__()
        hidden = channels * expand_ratio
        self.expand = nn.Conv2d(channels, hidden, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm2d(hidden)
        self.depthwise = nn.Conv2d(hidden, hidden, kernel_size=3, padding=1, groups=hidden, bias=False)
        self.bn2 = nn.BatchNorm2d(hidden)
        self.project = nn.Conv2d(hidden, channels, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(channels)
        self.act = nn.ReLU6()

    def forward(self, x):
        h = self.act(self.bn1(self.expand(x)))
        h = self.act(self.bn2(self.depthwise(h)))
        h = self.bn3(self.project(h))
        return x + h


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, expand_ratio]
