# solution: the gain is folded into the projection weight (W * g), and the row scale 1/rms is applied to the GEMM output instead of the input
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, d_model, d_out, eps):
        super().__init__()
        self.gain = nn.Parameter(1.0 + 0.1 * torch.randn(d_model))
        self.proj = nn.Linear(d_model, d_out, bias=False)
        self.eps = eps

    def forward(self, x):
        b, s, d = x.shape
        x2 = x.reshape(b * s, d)
        w = self.proj.weight * self.gain  # scales column j of W by gain[j]
        y = torch.mm(x2, w.t())
        ms = torch.linalg.vector_norm(x2, dim=1, keepdim=True).pow_(2).div_(d)
        y.mul_(ms.add_(self.eps).rsqrt_())
        return y.view(b, s, -1)
