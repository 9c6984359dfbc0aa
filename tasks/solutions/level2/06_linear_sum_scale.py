# solution: the feature sum is moved before the GEMM: sum_j (x W_j + b_j) = x . (sum_j W_j) + sum_j b_j, a matrix-vector product
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scaling):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scaling = scaling

    def forward(self, x):
        w_sum = self.fc.weight.sum(dim=0, keepdim=True)  # (1, in_features)
        b_sum = self.fc.bias.sum().reshape(1)
        s = torch.addmm(b_sum, x, w_sum.t())  # (batch, 1)
        return s.mul_(self.scaling)
