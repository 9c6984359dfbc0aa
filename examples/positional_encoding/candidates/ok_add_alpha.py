# expect-status: ok
# expect-accepted: true
# device: cpu
# why: the table is still rebuilt on every call, but the scale and the add run as one torch.add(alpha=...) instead of two passes over the embeddings.
import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, seq_len, d_model):
        super().__init__()
        self.seq_len = seq_len
        self.d_model = d_model

    def forward(self, x):
        position = torch.arange(self.seq_len, dtype=torch.float32, device=x.device).unsqueeze(1)
        frequency = torch.exp(torch.arange(0, self.d_model, 2, dtype=torch.float32, device=x.device)
                              * (-math.log(10000.0) / self.d_model))
        angle = position * frequency
        table = torch.stack([torch.sin(angle), torch.cos(angle)], dim=-1).flatten(1)
        return torch.add(table, x, alpha=math.sqrt(self.d_model))
