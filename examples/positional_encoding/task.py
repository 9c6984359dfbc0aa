import math

import torch
import torch.nn as nn

batch_size = 2
seq_len = 512
d_model = 256


class Model(nn.Module):
    """Embeddings scaled by sqrt(d_model) plus sinusoidal positions; the table is rebuilt on every call."""

    def __init__(self, seq_len, d_model):
        super().__init__()
        self.seq_len = seq_len
        self.d_model = d_model

    def forward(self, x):
        position = torch.arange(self.seq_len, dtype=torch.float32, device=x.device).unsqueeze(1)
        frequency = torch.exp(torch.arange(0, self.d_model, 2, dtype=torch.float32, device=x.device)
                              * (-math.log(10000.0) / self.d_model))
        angle = position * frequency
        table = torch.stack([torch.sin(angle), torch.cos(angle)], dim=-1).flatten(1)  # sin, cos interleaved
        return x * math.sqrt(self.d_model) + table


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model)]


def get_init_inputs():
    return [seq_len, d_model]
