# solution: per-row logsumexp minus the gathered target logit, instead of F.cross_entropy
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        lse = torch.logsumexp(logits, dim=1)
        picked = logits.gather(1, targets.unsqueeze(1)).squeeze(1)
        return lse - picked
