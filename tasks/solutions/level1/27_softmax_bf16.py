# solution: softmax written out in float32 (subtract row max, exp, divide by row sum), cast back to bfloat16 once
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        xf = x.float()
        e = torch.exp(xf - xf.amax(dim=-1, keepdim=True))
        return (e / e.sum(dim=-1, keepdim=True)).to(x.dtype)
