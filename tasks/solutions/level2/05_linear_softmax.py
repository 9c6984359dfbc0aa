# solution: addmm, then softmax computed by hand (max-subtract, exp in place, divide by sum / n)
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.out_features = out_features

    def forward(self, x):
        logits = torch.addmm(self.fc.bias, x, self.fc.weight.t())
        logits.sub_(logits.amax(dim=1, keepdim=True))
        logits.exp_()
        denom = logits.sum(dim=1, keepdim=True).div_(self.out_features)
        return logits.div_(denom)
