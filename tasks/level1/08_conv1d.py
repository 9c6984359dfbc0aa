# level 1: 1-D convolution (64 -> 128 channels, kernel 5) over long sequences; eager on H200 ~0.5 ms with cuDNN TF32 (default), ~1 ms in strict fp32 (43 GFLOP, 403 MB)
import torch
import torch.nn as nn

BATCH = 16
IN_CHANNELS = 64
OUT_CHANNELS = 128
LENGTH = 32768
KERNEL_SIZE = 5


class Model(nn.Module):
    """Applies nn.Conv1d (stride 1, padding 2, with bias) to a float32 (batch, channels, length) signal."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, LENGTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE]
