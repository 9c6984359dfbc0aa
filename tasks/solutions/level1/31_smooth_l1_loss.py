# solution: smooth L1 via clamping: with a = |d| and m = min(a, beta), loss = m * (a - 0.5 m) / beta
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, beta):
        super().__init__()
        self.beta = beta

    def forward(self, predictions, targets):
        a = (predictions - targets).abs()
        m = torch.clamp(a, max=self.beta)
        return m * (a - 0.5 * m) / self.beta
