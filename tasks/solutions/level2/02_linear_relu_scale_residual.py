# solution: F.linear, in-place ReLU, then one fused addcmul-style add (x + scale * h) via torch.add(alpha=)
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, features, scale):
        super().__init__()
        self.fc = nn.Linear(features, features)
        self.scale = scale

    def forward(self, x):
        h = F.linear(x, self.fc.weight, self.fc.bias)
        h.relu_()
        return torch.add(x, h, alpha=self.scale)
