import torch
import torch.nn as nn

batch_size = 64
in_features = 512
out_features = 384


class Model(nn.Module):
    """Projection written as matmul + separate bias add, then exact GELU."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features) / in_features ** 0.5)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)

    def forward(self, x):
        y = torch.matmul(x, self.weight.t())
        y = y + self.bias
        return torch.nn.functional.gelu(y)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
