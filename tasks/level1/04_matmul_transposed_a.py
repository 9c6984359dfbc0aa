# level 1: fp32 product with a transposed left operand, A.T @ B; eager on H200 ~1.5 ms (69 GFLOP, 128 MB)
import torch
import torch.nn as nn

M = 2048
K = 4096
N = 4096


class Model(nn.Module):
    """Computes A^T @ B where A is stored as K x M and B as K x N (float32)."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A.T, B)


def get_inputs():
    A = torch.randn(K, M)
    B = torch.randn(K, N)
    return [A, B]


def get_init_inputs():
    return []
