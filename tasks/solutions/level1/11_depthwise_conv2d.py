# solution: depthwise 3x3 as a sum of nine shifted, per-channel-scaled copies of the padded input
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=kernel_size // 2, groups=channels)

    def forward(self, x):
        w = self.conv.weight  # (C, 1, k, k)
        k = w.shape[-1]
        p = self.conv.padding[0]
        n, c, h, wd = x.shape
        xp = F.pad(x, (p, p, p, p))
        ho, wo = h + 2 * p - k + 1, wd + 2 * p - k + 1
        out = self.conv.bias.view(1, c, 1, 1).expand(n, c, ho, wo).clone()
        for i in range(k):
            for j in range(k):
                out.add_(xp[:, :, i:i + ho, j:j + wo] * w[:, 0, i, j].view(1, c, 1, 1))
        return out
