# level 2: bf16 nn.Linear (4096 -> 16384, 8192 rows) + tanh-approximate GELU; eager on H200 ~2.0 ms
import torch
import torch.nn as nn
import torch.nn.functional as F

num_tokens = 8192
in_features = 4096
out_features = 16384


class Model(nn.Module):
    """MLP up-projection in bfloat16 (weights and activations), tanh-approximate GELU."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features).to(torch.bfloat16)

    def forward(self, x):
        y = self.fc(x)
        return F.gelu(y, approximate="tanh")


def get_inputs():
    return [torch.randn(num_tokens, in_features).to(torch.bfloat16)]


def get_init_inputs():
    return [in_features, out_features]
