# expect-status: ok
# expect-accepted: true
# device: cpu
# why: baddbmm applies the 1/sqrt(d) scale inside the batched matmul (no separate division pass), then softmax and bmm.
import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        b, n, d = q.shape
        empty = torch.empty(b, n, k.shape[1], dtype=q.dtype, device=q.device)
        scores = torch.baddbmm(empty, q, k.transpose(1, 2), beta=0.0, alpha=1.0 / math.sqrt(d))
        return torch.bmm(torch.softmax(scores, dim=-1), v)
