# solution: runs the 1-D convolution as a 2-D convolution with a height-1 kernel, bias passed to F.conv2d
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        w = self.conv.weight.unsqueeze(2)
        pad = self.conv.padding[0]
        y = F.conv2d(x.unsqueeze(2), w, self.conv.bias, padding=(0, pad))
        return y.squeeze(2)
