# solution: per-row squared 2-norm of the difference divided by the row length
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        d = predictions - targets
        return (d * d).sum(dim=1) / d.shape[1]
