# solution: folds 1/sqrt(d) into q, flattens batch and heads, and runs bmm + softmax + bmm over chunks of 32 slices to bound the score buffer
import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.chunk = 32  # (batch*head) slices per step

    def forward(self, q, k, v):
        b, h, s, d = q.shape
        qf = (q * (1.0 / math.sqrt(d))).reshape(b * h, s, d)
        kf = k.reshape(b * h, s, d)
        vf = v.reshape(b * h, s, d)
        out = torch.empty_like(qf)
        for i in range(0, b * h, self.chunk):
            j = min(i + self.chunk, b * h)
            scores = torch.bmm(qf[i:j], kf[i:j].transpose(1, 2))
            torch.bmm(torch.softmax(scores, dim=-1), vf[i:j], out=out[i:j])
        return out.reshape(b, h, s, d)
