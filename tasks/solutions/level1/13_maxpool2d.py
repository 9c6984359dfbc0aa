# solution: pads with -inf and takes the maximum over unfolded 3x3 windows (Tensor.unfold on H and W)
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
        k, s, p = self.kernel_size, self.stride, self.padding
        xp = F.pad(x, (p, p, p, p), value=float("-inf"))
        win = xp.unfold(2, k, s).unfold(3, k, s)  # (N, C, Ho, Wo, k, k)
        return win.amax(dim=(-2, -1))
