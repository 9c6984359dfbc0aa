# solution: two-level scan: cumsum inside blocks of 64, plus an exclusive cumsum of the block totals
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim
        self.block = 64

    def forward(self, x):
        xt = x.movedim(self.dim, -1)
        n = xt.shape[-1]
        bsz = self.block
        if n % bsz != 0:
            return torch.cumsum(x, dim=self.dim)
        blocks = xt.reshape(xt.shape[:-1] + (n // bsz, bsz))
        inner = torch.cumsum(blocks, dim=-1)
        totals = inner[..., -1]
        offsets = torch.cumsum(totals, dim=-1) - totals
        out = (inner + offsets.unsqueeze(-1)).reshape(xt.shape)
        return out.movedim(-1, self.dim).contiguous()
