# level 1: per-sample cross-entropy of 65536 x 1000-class logits against integer targets; eager on H200 ~0.3 ms (262 MB)
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 65536
NUM_CLASSES = 1000


class Model(nn.Module):
    """Unreduced cross-entropy: one loss value per row of float32 logits, given int64 class targets."""

    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        return F.cross_entropy(logits, targets, reduction="none")


def get_inputs():
    logits = torch.randn(BATCH, NUM_CLASSES)
    targets = torch.randint(0, NUM_CLASSES, (BATCH,))
    return [logits, targets]


def get_init_inputs():
    return []
