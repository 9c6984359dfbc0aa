# solution: addmm on the bf16 tensors (bias fused into the GEMM epilogue), tanh-GELU in place on the GEMM output
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features).to(torch.bfloat16)

    def forward(self, x):
        y = torch.addmm(self.fc.bias, x, self.fc.weight.t())
        return F.gelu(y, approximate="tanh")
