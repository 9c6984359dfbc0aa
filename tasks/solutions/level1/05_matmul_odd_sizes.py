# solution: zero-pads every dimension up to a multiple of 16, multiplies, and slices the result back
import torch
import torch.nn as nn
import torch.nn.functional as F


def _round_up(n, m):
    return (n + m - 1) // m * m


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        m, k = A.shape
        n = B.shape[1]
        mp, kp, np_ = _round_up(m, 16), _round_up(k, 16), _round_up(n, 16)
        A_pad = F.pad(A, (0, kp - k, 0, mp - m))
        B_pad = F.pad(B, (0, np_ - n, 0, kp - k))
        return torch.mm(A_pad, B_pad)[:m, :n].contiguous()
