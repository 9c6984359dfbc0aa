# solution: residual and bias fused into one addmm on the flattened tokens, then functional layer_norm
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, d_ff, d_model):
        super().__init__()
        self.down = nn.Linear(d_ff, d_model)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, hidden, residual):
        b, s, f = hidden.shape
        r = residual.reshape(b * s, -1) + self.down.bias
        y = torch.addmm(r, hidden.reshape(b * s, f), self.down.weight.t())
        y = F.layer_norm(y, self.norm.normalized_shape, self.norm.weight, self.norm.bias, self.norm.eps)
        return y.view(b, s, -1)
