# level 1: 3x3 2-D convolution, 64 -> 128 channels at 112x112; eager on H200 ~0.5 ms with cuDNN TF32 (default), ~1.3 ms in strict fp32 (59 GFLOP, 309 MB)
import torch
import torch.nn as nn

BATCH = 32
IN_CHANNELS = 64
OUT_CHANNELS = 128
HEIGHT = 112
WIDTH = 112
KERNEL_SIZE = 3


class Model(nn.Module):
    """Applies nn.Conv2d (3x3, stride 1, padding 1, with bias) to a float32 NCHW image batch."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE]
