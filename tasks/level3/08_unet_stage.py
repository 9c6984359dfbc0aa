# level 3: one U-Net stage: double conv-BN-ReLU, max-pool down, double conv, conv-transpose up, concat skip, conv-BN-ReLU + 1x1 head, 16x32x128x128, fp32; eager on H200 ~4 ms
import torch
import torch.nn as nn

batch_size = 16
in_channels = 32
base_channels = 64
out_channels = 16
height = 128
width = 128


class DoubleConv(nn.Module):
    """Two (3x3 conv, BatchNorm, ReLU) layers."""

    def __init__(self, cin, cout):
        super().__init__()
        self.block = nn.Sequential(
            nn.Conv2d(cin, cout, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(),
            nn.Conv2d(cout, cout, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(),
        )

    def forward(self, x):
        return self.block(x)


class Model(nn.Module):
    """Encoder double conv, 2x max-pool, bottom double conv, 2x transposed-conv upsampling, skip concat, decoder conv."""

    def __init__(self, in_channels, base_channels, out_channels):
        super().__init__()
        c = base_channels
        self.enc = DoubleConv(in_channels, c)
        self.pool = nn.MaxPool2d(2)
        self.bottom = DoubleConv(c, 2 * c)
        self.up = nn.ConvTranspose2d(2 * c, c, kernel_size=2, stride=2)
        self.dec_conv = nn.Conv2d(2 * c, c, kernel_size=3, padding=1, bias=False)
        self.dec_bn = nn.BatchNorm2d(c)
        self.dec_relu = nn.ReLU()
        self.head = nn.Conv2d(c, out_channels, kernel_size=1)

    def forward(self, x):
        skip = self.enc(x)
        y = self.bottom(self.pool(skip))
        y = self.up(y)
        y = torch.cat([skip, y], dim=1)
        y = self.dec_relu(self.dec_bn(self.dec_conv(y)))
        return self.head(y)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, base_channels, out_channels]
