# expect-status: incorrect
# expect-accepted: false
# device: cpu
# why: skipping the 1/sqrt(d) scaling sharpens the softmax and changes the output well beyond tolerance.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        scores = torch.bmm(q, k.transpose(1, 2))
        return torch.bmm(torch.softmax(scores, dim=-1), v)
