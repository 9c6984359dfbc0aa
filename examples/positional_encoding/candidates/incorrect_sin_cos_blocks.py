# expect-status: incorrect
# expect-accepted: false
# device: cpu
# why: puts all the sines first and all the cosines after (torch.cat) instead of interleaving them, a common slip: the table has the right values in the wrong columns.
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
        table = torch.cat([torch.sin(angle), torch.cos(angle)], dim=-1)
        return torch.add(table, x, alpha=math.sqrt(self.d_model))
