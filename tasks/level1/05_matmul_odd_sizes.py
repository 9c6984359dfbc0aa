# level 1: fp32 matmul with sizes that are not multiples of 16; eager on H200 ~0.5 ms (17 GFLOP, 58 MB)
import torch
import torch.nn as nn

M = 4093
K = 2047
N = 1021


class Model(nn.Module):
    """Float32 matrix product (M x K) @ (K x N) with irregular (odd, prime-ish) dimensions."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, N)
    return [A, B]


def get_init_inputs():
    return []
