# solution: the score scale is applied inside baddbmm (alpha, beta=0) instead of a separate multiply over the score matrix
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, softmax_scale):
        super().__init__()
        self.softmax_scale = softmax_scale

    def forward(self, q, k, v):
        b, s, _ = q.shape
        scores = torch.empty(b, s, k.shape[1], dtype=q.dtype, device=q.device)
        scores = torch.baddbmm(scores, q, k.transpose(1, 2), beta=0.0, alpha=self.softmax_scale)
        weights = torch.softmax(scores, dim=-1)
        return torch.bmm(weights, v)
