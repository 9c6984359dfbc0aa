# expect-status: ok
# expect-accepted: true
# device: cpu
# why: the residual sum goes into one fresh buffer that is centred and scaled in place, then a single addcmul applies weight and bias.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x, residual):
        h = torch.add(x, residual)  # fresh buffer, ours to modify
        h.sub_(h.mean(dim=-1, keepdim=True))
        var = (h * h).mean(dim=-1, keepdim=True)
        h.mul_(torch.rsqrt(var.add_(self.eps)))
        return torch.addcmul(self.bias, h, self.weight)
