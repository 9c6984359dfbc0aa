# level 2: nn.Linear (1024 -> 2048, 8192 rows) + LayerNorm + SiLU, fp32; eager on H200 ~1.0 ms
import torch
import torch.nn as nn
import torch.nn.functional as F

num_rows = 8192
in_features = 1024
out_features = 2048


class Model(nn.Module):
    """Dense projection followed by LayerNorm over the output features and a SiLU activation."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features)

    def forward(self, x):
        y = self.proj(x)
        y = self.norm(y)
        return F.silu(y)


def get_inputs():
    return [torch.randn(num_rows, in_features)]


def get_init_inputs():
    return [in_features, out_features]
