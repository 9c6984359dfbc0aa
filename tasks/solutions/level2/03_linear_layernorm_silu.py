# solution: addmm for the projection, functional layer_norm with the module's affine parameters, in-place SiLU
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features)

    def forward(self, x):
        y = torch.addmm(self.proj.bias, x, self.proj.weight.t())
        y = F.layer_norm(y, self.norm.normalized_shape, self.norm.weight, self.norm.bias, self.norm.eps)
        return F.silu(y, inplace=True)
