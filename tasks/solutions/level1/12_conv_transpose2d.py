# solution: transposed convolution as zero-insertion upsampling followed by an ordinary convolution with the flipped, transposed kernel
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        w = self.deconv.weight  # (Ci, Co, k, k)
        k = w.shape[-1]
        s = self.deconv.stride[0]
        p = self.deconv.padding[0]
        n, c, h, wd = x.shape
        up = x.new_zeros(n, c, (h - 1) * s + 1, (wd - 1) * s + 1)
        up[:, :, ::s, ::s] = x
        w_conv = w.flip(-1, -2).transpose(0, 1)  # (Co, Ci, k, k)
        return F.conv2d(up, w_conv, self.deconv.bias, padding=k - 1 - p)
