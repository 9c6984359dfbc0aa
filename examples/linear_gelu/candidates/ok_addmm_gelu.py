# expect-status: ok
# expect-accepted: true
# device: cpu
# why: folding the bias add into one addmm call removes a pass over the output; same parameters, same result.
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features) / in_features ** 0.5)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)

    def forward(self, x):
        return F.gelu(torch.addmm(self.bias, x, self.weight.t()))
