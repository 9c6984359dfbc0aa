# solution: RMS from the vector 2-norm (||x|| / sqrt(d)) instead of mean of squares; weight folded in last
import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, features, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.25 * torch.randn(features))

    def forward(self, x):
        d = x.shape[-1]
        ms = torch.linalg.vector_norm(x, ord=2, dim=-1, keepdim=True).pow(2) / d
        return x * (self.weight / torch.sqrt(ms + self.eps))
