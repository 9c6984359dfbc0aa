# expect-status: incorrect
# expect-accepted: false
# device: cpu
# why: ReLU is cheaper than GELU but differs for negative and small inputs (gelu(-0.5) is about -0.15), so the result is rejected as incorrect.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features) / in_features ** 0.5)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)

    def forward(self, x):
        return torch.addmm(self.bias, x, self.weight.t()).clamp_min_(0.0)
