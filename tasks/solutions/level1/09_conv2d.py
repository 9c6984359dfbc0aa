# solution: explicit zero padding followed by an unpadded F.conv2d with the module's weight, bias added afterwards
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        ph, pw = self.conv.padding
        xp = F.pad(x, (pw, pw, ph, ph))
        y = F.conv2d(xp, self.conv.weight)
        return y + self.conv.bias.view(1, -1, 1, 1)
