# level 1: transposed 2-D convolution (4x4, stride 2) upsampling 64x64 -> 128x128, 128 -> 64 channels; eager on H200 ~0.4 ms with cuDNN TF32 (default), ~0.8 ms in strict fp32 (34 GFLOP, 202 MB)
import torch
import torch.nn as nn

BATCH = 32
IN_CHANNELS = 128
OUT_CHANNELS = 64
HEIGHT = 64
WIDTH = 64
KERNEL_SIZE = 4
STRIDE = 2
PADDING = 1


class Model(nn.Module):
    """Applies nn.ConvTranspose2d (kernel 4, stride 2, padding 1, with bias) to a float32 NCHW batch."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.deconv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, PADDING]
