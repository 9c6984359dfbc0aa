# expect-status: incorrect
# expect-accepted: false
# device: cpu
# why: the adapter is added without its scale (2/rank), so every output is off by the adapter's contribution times rank/2 - 1.
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

    def forward(self, x):
        return F.linear(x, self.weight, self.bias) + F.linear(F.linear(x, self.lora_a), self.lora_b)
