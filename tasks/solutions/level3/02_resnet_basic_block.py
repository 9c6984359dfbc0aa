# solution: channels_last convolutions, functional batch_norm on the modules' parameters and buffers, in-place ReLU and residual add
import torch
import torch.nn as nn
import torch.nn.functional as F


def _bn(x, bn):
    return F.batch_norm(x, bn.running_mean, bn.running_var, bn.weight, bn.bias,
                        training=True, momentum=bn.momentum, eps=bn.eps)


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, kernel_size=3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(channels, channels, kernel_size=3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        cl = torch.channels_last
        xc = x.contiguous(memory_format=cl)
        out = F.conv2d(xc, self.conv1.weight.contiguous(memory_format=cl), None, 1, 1)
        out = _bn(out, self.bn1).relu_()
        out = F.conv2d(out, self.conv2.weight.contiguous(memory_format=cl), None, 1, 1)
        out = _bn(out, self.bn2)
        out.add_(xc).relu_()
        return out.contiguous()
