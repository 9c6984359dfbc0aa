# solution: computes (B^T A)^T = A^T B, i.e. the transposed product, then makes it contiguous
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.mm(B.t(), A).t().contiguous()
