# level 1: 2-D max pooling (3x3, stride 2, padding 1) on 32x64x224x224; eager on H200 ~0.2 ms (514 MB)
import torch
import torch.nn as nn

BATCH = 32
CHANNELS = 64
HEIGHT = 224
WIDTH = 224
KERNEL_SIZE = 3
STRIDE = 2
PADDING = 1


class Model(nn.Module):
    """nn.MaxPool2d with a 3x3 window, stride 2 and padding 1 over a float32 NCHW batch."""

    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [KERNEL_SIZE, STRIDE, PADDING]
