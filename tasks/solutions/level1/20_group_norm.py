# solution: group norm written out: reshape to (N, G, -1), var_mean per group, then per-channel affine
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, num_groups, channels):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups, channels, eps=1e-5)

    def forward(self, x):
        gn = self.gn
        n, c = x.shape[0], x.shape[1]
        g = x.reshape(n, gn.num_groups, -1)
        var, mean = torch.var_mean(g, dim=-1, correction=0, keepdim=True)
        xhat = ((g - mean) * torch.rsqrt(var + gn.eps)).reshape(x.shape)
        shape = (1, c) + (1,) * (x.dim() - 2)
        return xhat * gn.weight.view(shape) + gn.bias.view(shape)
