# level 1: per-row mean squared error between two 131072x512 float32 matrices; eager on H200 ~0.4 ms (512 MB read + temp)
import torch
import torch.nn as nn
import torch.nn.functional as F

ROWS = 131072
COLS = 512


class Model(nn.Module):
    """Mean squared error between predictions and targets, averaged within each row (one value per row)."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return F.mse_loss(predictions, targets, reduction="none").mean(dim=1)


def get_inputs():
    return [torch.randn(ROWS, COLS), torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
