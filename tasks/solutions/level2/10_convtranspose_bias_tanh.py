# solution: functional conv_transpose2d with the extra bias subtracted from the layer bias beforehand, in-place tanh
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size=4, stride=2, padding=1)
        self.channel_bias = nn.Parameter(torch.randn(out_channels, 1, 1) * 0.3)

    def forward(self, x):
        bias = self.deconv.bias - self.channel_bias.view(-1)
        y = F.conv_transpose2d(x, self.deconv.weight, bias, stride=2, padding=1)
        return y.tanh_()
