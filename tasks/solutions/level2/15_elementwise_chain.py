# solution: addcmul for the affine step, then clamp/exp/mul all in place on that one intermediate
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cols, clamp_limit):
        super().__init__()
        self.a = nn.Parameter(0.5 + 0.25 * torch.randn(cols))
        self.b = nn.Parameter(0.25 * torch.randn(cols))
        self.clamp_limit = clamp_limit

    def forward(self, x, y):
        t = torch.addcmul(self.b, x, self.a)
        t.clamp_(-self.clamp_limit, self.clamp_limit)
        t.exp_()
        return t.mul_(y)
