# solution: torch.index_select on the flattened ids, reshaped back, using the module's own weight
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, num_embeddings, embedding_dim):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, embedding_dim)

    def forward(self, ids):
        w = self.embedding.weight
        rows = torch.index_select(w, 0, ids.reshape(-1))
        return rows.reshape(ids.shape + (w.shape[1],))
