# A Transformer classifier over torch's TransformerEncoderLayer with a causal mask.
import torch
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(3, 16)
        layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, num_layers=2)
        self.out = nn.Linear(16, 4)

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        h = self.enc(self.inp(x), mask=mask, is_causal=True)
        return self.out(h.mean(dim=1))


def build():
    return Classifier()


def train(model, data, steps):
    x = torch.tensor(data["seq"])
    y = torch.tensor(data["label"]).long()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    losses = []
    for _ in range(steps):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    return losses
