# level 2: SwiGLU gate silu(x W1) * (x W2), d 2048 -> hidden 4096, 2048 rows, fp32; eager on H200 ~1.6 ms
import torch
import torch.nn as nn
import torch.nn.functional as F

num_tokens = 2048
d_model = 2048
d_hidden = 4096


class Model(nn.Module):
    """Gated linear unit: SiLU of one bias-free projection times a second bias-free projection."""

    def __init__(self, d_model, d_hidden):
        super().__init__()
        self.gate = nn.Linear(d_model, d_hidden, bias=False)
        self.up = nn.Linear(d_model, d_hidden, bias=False)

    def forward(self, x):
        g = F.silu(self.gate(x))
        u = self.up(x)
        return g * u


def get_inputs():
    return [torch.randn(num_tokens, d_model)]


def get_init_inputs():
    return [d_model, d_hidden]
