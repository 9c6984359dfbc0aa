# level 3: 4-layer MLP 1024 -> 4096 -> 4096 -> 4096 -> 1000 with ReLU, batch 1024, fp32; eager on H200 ~2.2 ms
import torch
import torch.nn as nn

batch_size = 1024
input_size = 1024
hidden_size = 4096
num_classes = 1000


class Model(nn.Module):
    """Plain multilayer perceptron: three hidden Linear+ReLU layers and a linear output layer."""

    def __init__(self, input_size, hidden_size, num_classes):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(input_size, hidden_size),
            nn.ReLU(),
            nn.Linear(hidden_size, hidden_size),
            nn.ReLU(),
            nn.Linear(hidden_size, hidden_size),
            nn.ReLU(),
            nn.Linear(hidden_size, num_classes),
        )
        # He initialisation keeps the activations at unit scale through the ReLU stack
        for m in self.layers:
            if isinstance(m, nn.Linear):
                nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
                nn.init.uniform_(m.bias, -0.1, 0.1)

    def forward(self, x):
        return self.layers(x)


def get_inputs():
    return [torch.randn(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_classes]
