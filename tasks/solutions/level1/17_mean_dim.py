# solution: column means as a matrix-vector product with a constant 1/rows vector
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        xt = x.movedim(self.dim, 0)
        n = xt.shape[0]
        flat = xt.reshape(n, -1)
        w = torch.full((n,), 1.0 / n, dtype=x.dtype, device=x.device)
        return torch.mv(flat.t(), w).reshape(xt.shape[1:])
