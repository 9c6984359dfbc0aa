# level 1: float16 matrix product (M x K) @ (K x N); eager on H200 ~0.8 ms (550 GFLOP, 268 MB)
import torch
import torch.nn as nn

M = 8192
K = 4096
N = 8192


class Model(nn.Module):
    """Float16 matrix product of an M x K and a K x N matrix (float16 result)."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    A = torch.randn(M, K).to(torch.float16)
    B = torch.randn(K, N).to(torch.float16)
    return [A, B]


def get_init_inputs():
    return []
