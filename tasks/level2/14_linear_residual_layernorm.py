# level 2: transformer sublayer output: Linear (4096 -> 1024) + bias + residual + LayerNorm, 8x1024 tokens, fp32; eager on H200 ~1.7 ms
import torch
import torch.nn as nn

batch_size = 8
seq_len = 1024
d_ff = 4096
d_model = 1024


class Model(nn.Module):
    """Down-projection of an MLP hidden state, residual connection, post-LayerNorm."""

    def __init__(self, d_ff, d_model):
        super().__init__()
        self.down = nn.Linear(d_ff, d_model)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, hidden, residual):
        y = self.down(hidden)
        y = y + residual
        return self.norm(y)


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_ff), torch.randn(batch_size, seq_len, d_model)]


def get_init_inputs():
    return [d_ff, d_model]
