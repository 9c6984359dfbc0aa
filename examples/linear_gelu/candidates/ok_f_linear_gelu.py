# expect-status: ok
# expect-accepted: true
# device: cpu
# why: F.linear computes the biased projection in one call (a single GEMM with the bias fused), then exact GELU.
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features) / in_features ** 0.5)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)

    def forward(self, x):
        y = F.linear(x, self.weight, self.bias)
        return F.gelu(y, approximate="none")
