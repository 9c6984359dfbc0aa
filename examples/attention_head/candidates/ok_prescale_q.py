# expect-status: ok
# expect-accepted: true
# device: cpu
# why: scaling q (heads x seq x d) instead of the scores (heads x seq x seq) touches 4x fewer elements before the two bmm calls.
import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        scores = torch.bmm(q * (1.0 / math.sqrt(q.shape[-1])), k.transpose(1, 2))
        return torch.bmm(torch.softmax(scores, dim=-1), v)
