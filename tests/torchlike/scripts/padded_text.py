# A bag-of-embeddings text classifier: a padded batch, padding_idx on the embedding,
# mean pooling over the real tokens only (a float mask and its row sums), SGD.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence

PAD = 0


class MeanPoolClassifier(nn.Module):
    def __init__(self, vocab=12, dim=6, classes=3):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim, padding_idx=PAD)
        self.fc = nn.Linear(dim, classes)

    def forward(self, text, mask):
        emb = self.embedding(text)  # [batch, seq, dim]
        mask = mask.unsqueeze(-1).float()
        summed = (emb * mask).sum(dim=1)
        counts = mask.sum(dim=1).clamp(min=1.0)
        return self.fc(summed / counts)


def build():
    return MeanPoolClassifier()


def train(model, data, steps):
    tokens = data["tokens"]
    seqs = [torch.tensor(tokens[i * 7 : i * 7 + 2 + i] + 1) for i in range(6)]
    text = pad_sequence(seqs, batch_first=True, padding_value=PAD)
    mask = text != PAD
    labels = torch.tensor(data["label"], dtype=torch.int64)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        logits = model(text, mask)
        loss = F.cross_entropy(logits, labels)
        loss.backward()
        optimizer.step()
        acc = (logits.argmax(1) == labels).float().mean()
        losses += [loss.item(), acc.item()]
    losses.append(model.embedding.weight[PAD].abs().sum().item())
    return losses
