# solution: training-mode batch norm written out: per-channel var_mean, folded scale/shift, running-stat update
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        bn = self.bn
        var, mean = torch.var_mean(x, dim=(0, 2, 3), correction=0)
        if self.training and bn.track_running_stats:
            n = x.numel() // x.shape[1]
            with torch.no_grad():
                bn.num_batches_tracked.add_(1)
                m = bn.momentum
                bn.running_mean.mul_(1 - m).add_(mean, alpha=m)
                bn.running_var.mul_(1 - m).add_(var * (n / max(n - 1, 1)), alpha=m)
        scale = bn.weight * torch.rsqrt(var + bn.eps)
        shift = bn.bias - mean * scale
        return torch.addcmul(shift.view(1, -1, 1, 1), x, scale.view(1, -1, 1, 1))
