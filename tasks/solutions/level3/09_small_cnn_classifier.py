# solution: channels_last feature extractor with functional BN and in-place ReLU; global pool as a plain mean; classifier as addmm
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
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
        cl = torch.channels_last
        h = x.contiguous(memory_format=cl)
        mods = list(self.features)
        for i in range(0, len(mods), 3):
            conv, bn = mods[i], mods[i + 1]
            h = F.conv2d(h, conv.weight.contiguous(memory_format=cl), None, 2, 1)
            h = F.batch_norm(h, bn.running_mean, bn.running_var, bn.weight, bn.bias,
                             training=True, momentum=bn.momentum, eps=bn.eps).relu_()
        pooled = h.mean(dim=(2, 3))
        return torch.addmm(self.classifier.bias, pooled, self.classifier.weight.t())
