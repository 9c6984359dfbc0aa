# solution: both biases folded into one addmm (bias vector summed once), GELU applied in place on the GEMM output
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.extra_bias = nn.Parameter(torch.randn(out_features) * 0.2)

    def forward(self, x):
        bias = self.fc.bias + self.extra_bias
        y = torch.addmm(bias, x, self.fc.weight.t())
        return F.gelu(y)
