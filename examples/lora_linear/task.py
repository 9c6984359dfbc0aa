import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4
features = 512
rank = 16


class Model(nn.Module):
    """A linear layer with a low-rank (LoRA) adapter, merged into the weight on every call."""

    def __init__(self, features, rank):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, features) / features ** 0.5)
        self.bias = nn.Parameter(torch.randn(features) * 0.1)
        self.lora_a = nn.Parameter(torch.randn(rank, features) / features ** 0.5)
        self.lora_b = nn.Parameter(torch.randn(features, rank) / rank ** 0.5)
        self.scale = 2.0 / rank

    def forward(self, x):
        weight = self.weight + self.scale * (self.lora_b @ self.lora_a)
        return F.linear(x, weight, self.bias)


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features, rank]
