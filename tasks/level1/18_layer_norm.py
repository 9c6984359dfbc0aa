# level 1: layer norm over the last 2048 features of a 64x512x2048 tensor; eager on H200 ~0.2 ms (512 MB)
import torch
import torch.nn as nn

BATCH = 64
SEQ = 512
FEATURES = 2048


class Model(nn.Module):
    """nn.LayerNorm over the last dimension with a learned (randomly initialised) scale and shift, float32."""

    def __init__(self, features):
        super().__init__()
        self.norm = nn.LayerNorm(features, eps=1e-5)
        with torch.no_grad():
            self.norm.weight.normal_(1.0, 0.25)
            self.norm.bias.normal_(0.0, 0.25)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, SEQ, FEATURES)]


def get_init_inputs():
    return [FEATURES]
