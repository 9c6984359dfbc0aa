# level 2: RMSNorm (written out, learned gain) + Linear (2048 -> 4096, no bias), 8x1024 tokens, fp32; eager on H200 ~3.2 ms
import torch
import torch.nn as nn

batch_size = 8
seq_len = 1024
d_model = 2048
d_out = 4096
eps = 1e-6


class Model(nn.Module):
    """Root-mean-square normalisation over the last dimension with a learned gain, then a projection."""

    def __init__(self, d_model, d_out, eps):
        super().__init__()
        self.gain = nn.Parameter(1.0 + 0.1 * torch.randn(d_model))
        self.proj = nn.Linear(d_model, d_out, bias=False)
        self.eps = eps

    def forward(self, x):
        ms = x.pow(2).mean(dim=-1, keepdim=True)
        xn = x * torch.rsqrt(ms + self.eps)
        xn = xn * self.gain
        return self.proj(xn)


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model)]


def get_init_inputs():
    return [d_model, d_out, eps]
