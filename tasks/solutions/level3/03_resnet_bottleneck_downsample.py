# solution: functional conv/batch_norm calls with in-place ReLUs; the shortcut's BN output is added in place into the main path
import torch
import torch.nn as nn
import torch.nn.functional as F


def _bn(x, bn):
    return F.batch_norm(x, bn.running_mean, bn.running_var, bn.weight, bn.bias,
                        training=True, momentum=bn.momentum, eps=bn.eps)


class ModelNew(nn.Module):
    def __init__(self, in_channels, mid_channels, expansion, stride):
        super().__init__()
        out_channels = mid_channels * expansion
        self.stride = stride
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
        s = self.stride
        out = _bn(F.conv2d(x, self.conv1.weight), self.bn1).relu_()
        out = _bn(F.conv2d(out, self.conv2.weight, None, s, 1), self.bn2).relu_()
        out = _bn(F.conv2d(out, self.conv3.weight), self.bn3)
        sc = _bn(F.conv2d(x, self.downsample[0].weight, None, s), self.downsample[1])
        return out.add_(sc).relu_()
