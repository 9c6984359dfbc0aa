# solution: exact GELU written with torch.erf, evaluated in float32 and rounded to bfloat16 once
import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        xf = x.float()
        y = 0.5 * xf * (1.0 + torch.erf(xf * (1.0 / math.sqrt(2.0))))
        return y.to(x.dtype)
