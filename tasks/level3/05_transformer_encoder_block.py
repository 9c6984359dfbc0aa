# level 3: pre-LN transformer encoder block, explicit multi-head attention (12 heads) + GELU MLP, batch 8, seq 512, d 768, fp32; eager on H200 ~2.5 ms
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 8
seq_len = 512
d_model = 768
num_heads = 12
d_ff = 3072


class Model(nn.Module):
    """Transformer encoder layer: x + MHA(LN(x)), then + MLP(LN(.)); attention written out with matmuls."""

    def __init__(self, d_model, num_heads, d_ff):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.ln1 = nn.LayerNorm(d_model)
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)

    def attention(self, x):
        b, s, d = x.shape
        q = self.q_proj(x).view(b, s, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.num_heads, self.head_dim).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        weights = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(weights, v)
        ctx = ctx.transpose(1, 2).reshape(b, s, d)
        return self.o_proj(ctx)

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        h = self.fc2(F.gelu(self.fc1(self.ln2(x))))
        return x + h


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model)]


def get_init_inputs():
    return [d_model, num_heads, d_ff]
