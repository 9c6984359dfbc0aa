# level 3: small CNN classifier: four strided conv-BN-ReLU stages + adaptive avg pool + Linear, 64x3x224x224, fp32; eager on H200 ~1.5 ms
import torch
import torch.nn as nn

batch_size = 64
in_channels = 3
image_size = 224
num_classes = 100


class Model(nn.Module):
    """Four stride-2 3x3 conv/BN/ReLU stages (32, 64, 128, 256 channels), global average pool, linear classifier."""

    def __init__(self, in_channels, num_classes):
        super().__init__()
        layers = []
        cin = in_channels
        for cout in (32, 64, 128, 256):
            layers += [
                nn.Conv2d(cin, cout, kernel_size=3, stride=2, padding=1, bias=False),
                nn.BatchNorm2d(cout),
                nn.ReLU(),
            ]
            cin = cout
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(256, num_classes)

    def forward(self, x):
        x = self.features(x)
        x = self.pool(x)
        x = torch.flatten(x, 1)
        return self.classifier(x)


def get_inputs():
    # a per-image colour cast on top of pixel noise, so globally pooled features differ between images
    cast = torch.randn(batch_size, in_channels, 1, 1)
    return [torch.randn(batch_size, in_channels, image_size, image_size) * 0.5 + cast]


def get_init_inputs():
    return [in_channels, num_classes]
