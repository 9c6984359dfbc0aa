# expect-status: ok
# expect-accepted: true
# device: cpu
# why: x·(W + s·B·A)ᵀ = x·Wᵀ + s·(x·Aᵀ)·Bᵀ: the adapter runs on the few input rows instead of being merged into the full weight on every call.
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
        return torch.addmm(F.linear(x, self.weight, self.bias), F.linear(x, self.lora_a), self.lora_b.t(), alpha=self.scale)
