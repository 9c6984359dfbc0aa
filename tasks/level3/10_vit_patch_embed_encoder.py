# level 3: ViT front end: 16x16 patch embedding (conv) + class token + position embedding + 2 pre-LN encoder layers (explicit attention) + final LN, batch 32, 224x224, d 768, fp32; eager on H200 ~6 ms
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 32
image_size = 224
patch_size = 16
in_channels = 3
d_model = 768
num_heads = 12
d_ff = 3072
num_layers = 2


class EncoderLayer(nn.Module):
    """Pre-LN transformer encoder layer with attention written out."""

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

    def forward(self, x):
        b, s, d = x.shape
        h = self.ln1(x)
        q = self.q_proj(h).view(b, s, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(h).view(b, s, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(h).view(b, s, self.num_heads, self.head_dim).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v)
        x = x + self.o_proj(ctx.transpose(1, 2).reshape(b, s, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Model(nn.Module):
    """Patch embedding, class token and learned positions, a stack of encoder layers, final LayerNorm over all tokens."""

    def __init__(self, image_size, patch_size, in_channels, d_model, num_heads, d_ff, num_layers):
        super().__init__()
        num_patches = (image_size // patch_size) ** 2
        self.patch_embed = nn.Conv2d(in_channels, d_model, kernel_size=patch_size, stride=patch_size)
        self.cls_token = nn.Parameter(torch.randn(1, 1, d_model) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, num_patches + 1, d_model) * 0.02)
        self.layers = nn.ModuleList([EncoderLayer(d_model, num_heads, d_ff) for _ in range(num_layers)])
        self.norm = nn.LayerNorm(d_model)

    def forward(self, images):
        x = self.patch_embed(images)            # (b, d, h/p, w/p)
        x = x.flatten(2).transpose(1, 2)        # (b, n, d)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat([cls, x], dim=1) + self.pos_embed
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, image_size, image_size)]


def get_init_inputs():
    return [image_size, patch_size, in_channels, d_model, num_heads, d_ff, num_layers]
