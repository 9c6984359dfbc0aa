# level 1: row softmax over 1024 columns of a 131072x1024 bfloat16 matrix; eager on H200 ~0.15 ms (537 MB)
import torch
import torch.nn as nn

ROWS = 131072
COLS = 1024


class Model(nn.Module):
    """Softmax along the last dimension of a bfloat16 matrix (bfloat16 result)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    # logits scaled by 4 so that each row has a few probabilities well above 1e-2
    return [(4.0 * torch.randn(ROWS, COLS)).to(torch.bfloat16)]


def get_init_inputs():
    return []
