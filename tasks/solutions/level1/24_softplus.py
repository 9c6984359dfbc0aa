# solution: numerically stable softplus as relu(x) + log1p(exp(-|x|)) (agrees with the thresholded form to ~2e-9)
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x) + torch.log1p(torch.exp(-x.abs()))
