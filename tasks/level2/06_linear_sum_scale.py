# level 2: nn.Linear (4096 -> 4096, batch 2048) + sum over features + scaling, fp32; eager on H200 ~1.5 ms
import torch
import torch.nn as nn

batch_size = 2048
in_features = 4096
out_features = 4096
scaling = 0.125


class Model(nn.Module):
    """Dense layer whose outputs are summed over the feature dimension and multiplied by a constant."""

    def __init__(self, in_features, out_features, scaling):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scaling = scaling

    def forward(self, x):
        y = self.fc(x)
        s = torch.sum(y, dim=1, keepdim=True)
        return s * self.scaling


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scaling]
