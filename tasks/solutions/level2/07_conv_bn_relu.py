# solution: functional conv2d and batch_norm on the module's own parameters and running buffers, in-place ReLU
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        y = F.conv2d(x, self.conv.weight, None, 1, 1)
        bn = self.bn
        y = F.batch_norm(y, bn.running_mean, bn.running_var, bn.weight, bn.bias,
                         training=True, momentum=bn.momentum, eps=bn.eps)
        return y.relu_()
