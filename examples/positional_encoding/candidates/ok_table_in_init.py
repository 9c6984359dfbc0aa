# expect-status: ok
# expect-accepted: true
# device: cpu
# why: the table depends only on the constructor's sizes, so it is built once into a buffer (which follows the model to its device) and each call is one fused multiply-add.
import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, seq_len, d_model):
        super().__init__()
        position = torch.arange(seq_len, dtype=torch.float32).unsqueeze(1)
        frequency = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
        angle = position * frequency
        self.register_buffer("table", torch.stack([torch.sin(angle), torch.cos(angle)], dim=-1).flatten(1), persistent=False)
        self.scale = math.sqrt(d_model)

    def forward(self, x):
        return torch.add(self.table, x, alpha=self.scale)
