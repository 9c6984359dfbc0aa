# level 1: scaled dot-product attention (no mask), batch 8, 16 heads, seq 1024, head dim 64, float32; eager on H200 ~1.5 ms (34 GFLOP + ~3 GB of score-matrix traffic)
import math

import torch
import torch.nn as nn

BATCH = 8
HEADS = 16
SEQ_LEN = 1024
HEAD_DIM = 64


class Model(nn.Module):
    """Attention softmax(Q K^T / sqrt(d)) V written out explicitly, float32 (batch, heads, seq, dim) tensors."""

    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        weights = torch.softmax(scores, dim=-1)
        return torch.matmul(weights, v)


def get_inputs():
    shape = (BATCH, HEADS, SEQ_LEN, HEAD_DIM)
    return [torch.randn(shape), torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return []
