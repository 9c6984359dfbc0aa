# expect-status: ok
# expect-accepted: true
# device: cpu
# why: the op-by-op normalisation collapses into one F.layer_norm call after the residual add.
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x, residual):
        return F.layer_norm(x + residual, (x.shape[-1],), self.weight, self.bias, self.eps)
