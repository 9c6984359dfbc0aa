# solution: group norm written from group statistics; the spatial mean of the normalised map is taken from per-channel means, so the normalised map is never written
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, num_groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3)
        self.gn = nn.GroupNorm(num_groups, out_channels)

    def forward(self, x):
        y = F.conv2d(x, self.conv.weight, self.conv.bias)
        n, c = y.shape[0], y.shape[1]
        g = self.gn.num_groups
        yg = y.reshape(n, g, -1)
        mean = yg.mean(dim=2, keepdim=True)  # (n, g, 1)
        var = (yg - mean).pow_(2).mean(dim=2, keepdim=True)
        rstd = torch.rsqrt(var + self.gn.eps)
        ch_mean = y.mean(dim=(2, 3)).reshape(n, g, c // g)
        z = (ch_mean - mean) * rstd
        return z.reshape(n, c) * self.gn.weight + self.gn.bias
