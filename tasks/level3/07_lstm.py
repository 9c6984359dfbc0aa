# level 3: 2-layer nn.LSTM (input 256, hidden 512, batch_first), batch 32, seq 256, returns the output sequence, fp32; eager on H200 ~5 ms
import torch
import torch.nn as nn

batch_size = 32
seq_len = 256
input_size = 256
hidden_size = 512
num_layers = 2


class Model(nn.Module):
    """Stacked LSTM over a batch-first sequence, starting from zero states; returns every step's top-layer output."""

    def __init__(self, input_size, hidden_size, num_layers):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers=num_layers, batch_first=True)
        # weights 3.0x wider than the default uniform(+-1/sqrt(hidden)), so the top layer's
        # output is not squeezed towards zero
        bound = 3.0 / hidden_size ** 0.5
        for name, p in self.lstm.named_parameters():
            if name.startswith("weight"):
                nn.init.uniform_(p, -bound, bound)

    def forward(self, x):
        out, _ = self.lstm(x)
        return out


def get_inputs():
    return [torch.randn(batch_size, seq_len, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
