# solution: average pooling as a depthwise F.conv2d with a constant 1/(k*k) kernel (zero padding counted)
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding

    def forward(self, x):
        k = self.kernel_size
        c = x.shape[1]
        w = torch.full((c, 1, k, k), 1.0 / (k * k), dtype=x.dtype, device=x.device)
        return F.conv2d(x, w, stride=self.stride, padding=self.padding, groups=c)
