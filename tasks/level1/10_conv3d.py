# level 1: 3x3x3 3-D convolution, 32 -> 64 channels on 32x64x64 volumes; eager on H200 ~1 ms with cuDNN TF32 (default), ~2.5 ms in strict fp32 (116 GFLOP, 403 MB)
import torch
import torch.nn as nn

BATCH = 8
IN_CHANNELS = 32
OUT_CHANNELS = 64
DEPTH = 32
HEIGHT = 64
WIDTH = 64
KERNEL_SIZE = 3


class Model(nn.Module):
    """Applies nn.Conv3d (3x3x3, stride 1, padding 1, with bias) to a float32 NCDHW volume batch."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE]
