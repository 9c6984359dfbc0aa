# solution: moves the reduced dimension last and sums with a ones-vector matrix product
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        xt = x.movedim(self.dim, -1)
        ones = torch.ones(xt.shape[-1], 1, dtype=x.dtype, device=x.device)
        s = torch.matmul(xt, ones)  # (..., 1)
        return s.movedim(-1, self.dim).contiguous()
