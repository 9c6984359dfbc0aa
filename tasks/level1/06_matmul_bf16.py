# level 1: square bfloat16 matrix product; eager on H200 ~1.5 ms (1.1 TFLOP at ~750 TFLOP/s, 403 MB)
import torch
import torch.nn as nn

N = 8192


class Model(nn.Module):
    """Product of two square N x N bfloat16 matrices (bfloat16 result)."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    A = torch.randn(N, N).to(torch.bfloat16)
    B = torch.randn(N, N).to(torch.bfloat16)
    return [A, B]


def get_init_inputs():
    return []
