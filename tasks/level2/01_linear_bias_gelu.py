# level 2: nn.Linear (4096 -> 4096, batch 2048) + extra bias + exact GELU, fp32; eager on H200 ~1.5 ms
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 2048
in_features = 4096
out_features = 4096


class Model(nn.Module):
    """Dense layer, a second learned bias vector added on top, then exact (erf) GELU."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.extra_bias = nn.Parameter(torch.randn(out_features) * 0.2)

    def forward(self, x):
        y = self.fc(x)
        y = y + self.extra_bias
        return F.gelu(y)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
