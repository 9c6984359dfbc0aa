# solution: SiLU as x / (1 + exp(-x)) instead of F.silu
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x / (1.0 + torch.exp(-x))
