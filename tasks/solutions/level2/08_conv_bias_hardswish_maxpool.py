# solution: the extra channel bias is folded into the convolution bias; in-place hardswish; functional max-pool
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3)
        self.channel_bias = nn.Parameter(torch.randn(out_channels, 1, 1) * 0.5)
        self.pool = nn.MaxPool2d(kernel_size=2)

    def forward(self, x):
        bias = self.conv.bias + self.channel_bias.view(-1)
        y = F.conv2d(x, self.conv.weight, bias)
        y = F.hardswish(y, inplace=True)
        return F.max_pool2d(y, 2)
