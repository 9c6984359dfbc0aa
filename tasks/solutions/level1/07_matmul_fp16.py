# solution: computes the product as (B^T A^T)^T with torch.mm in float16
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.mm(B.t(), A.t()).t().contiguous()
