# solution: layer norm written out with torch.var_mean, rsqrt and a fused addcmul for the affine step
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.norm = nn.LayerNorm(features, eps=1e-5)

    def forward(self, x):
        var, mean = torch.var_mean(x, dim=-1, correction=0, keepdim=True)
        xhat = (x - mean) * torch.rsqrt(var + self.norm.eps)
        return torch.addcmul(self.norm.bias, xhat, self.norm.weight)
