# solution: torch.mm into a preallocated output instead of the generic torch.matmul dispatcher
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        out = torch.empty(A.shape[0], B.shape[1], dtype=A.dtype, device=A.device)
        return torch.mm(A, B, out=out)
