# level 1: RMS norm written out, x * rsqrt(mean(x^2) + eps) * weight, on 16384x4096; eager on H200 ~0.6 ms (several 256 MB passes)
import torch
import torch.nn as nn

ROWS = 16384
FEATURES = 4096


class Model(nn.Module):
    """RMS normalisation over the last dimension with a learned per-feature scale, float32."""

    def __init__(self, features, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.25 * torch.randn(features))

    def forward(self, x):
        inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * inv_rms * self.weight


def get_inputs():
    return [torch.randn(ROWS, FEATURES)]


def get_init_inputs():
    return [FEATURES, 1e-6]
