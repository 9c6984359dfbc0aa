# expect-status: ok
# expect-accepted: true
# device: cpu
# why: still merges the adapter on every call, but in one addmm (W + s·B·A) instead of a matmul, a scale and an add.
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, features, rank):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, features) / features ** 0.5)
        self.bias = nn.Parameter(torch.randn(features) * 0.1)
        self.lora_a = nn.Parameter(torch.randn(rank, features) / features ** 0.5)
        self.lora_b = nn.Parameter(torch.randn(features, rank) / rank ** 0.5)
        self.scale = 2.0 / rank

    def forward(self, x):
        weight = torch.addmm(self.weight, self.lora_b, self.lora_a, alpha=self.scale)
        return F.linear(x, weight, self.bias)
