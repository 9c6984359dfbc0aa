# solution: pool before ReLU (max and ReLU commute, so ReLU touches a quarter of the values), channels_last convolution, contiguous NCHW result
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1).to(torch.bfloat16)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        xc = x.contiguous(memory_format=torch.channels_last)
        y = F.conv2d(xc, self.conv.weight.contiguous(memory_format=torch.channels_last), self.conv.bias, 1, 1)
        y = F.max_pool2d(y, 2)
        return y.relu_().contiguous()
