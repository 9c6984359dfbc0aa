# solution: channels_last layout for both convolutions, pointwise conv as a 1x1 conv in NHWC, in-place clamp for ReLU6, back to contiguous NCHW
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, channels, out_channels):
        super().__init__()
        self.depthwise = nn.Conv2d(channels, channels, kernel_size=3, padding=1, groups=channels)
        self.pointwise = nn.Conv2d(channels, out_channels, kernel_size=1)

    def forward(self, x):
        xc = x.contiguous(memory_format=torch.channels_last)
        dw = self.depthwise
        y = F.conv2d(xc, dw.weight, dw.bias, 1, 1, 1, dw.groups)
        y = F.conv2d(y, self.pointwise.weight, self.pointwise.bias)
        y = y.clamp_(0.0, 6.0)
        return y.contiguous()
