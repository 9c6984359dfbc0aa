# solution: splits the tall operand into row blocks and multiplies each block with torch.mm
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.block_rows = 32768

    def forward(self, A, B):
        out = torch.empty(A.shape[0], B.shape[1], dtype=A.dtype, device=A.device)
        for start in range(0, A.shape[0], self.block_rows):
            stop = min(start + self.block_rows, A.shape[0])
            torch.mm(A[start:stop], B, out=out[start:stop])
        return out
