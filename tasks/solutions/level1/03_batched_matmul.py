# solution: the batched product expressed as an einsum over the shared inner index
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.einsum("bmk,bkn->bmn", A, B)
