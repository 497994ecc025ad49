# A data pipeline in float64: a Dataset that returns dicts (collated key by key by the
# default collate), a second loader with a hand-written collate_fn that pads ragged rows
# and returns lengths, Subset with explicit indices, random_split with a seeded
# generator (only the split sizes are compared: the draws differ between libraries),
# drop_last, len(loader), the model made float64 with .double(), BatchNorm frozen by
# putting it in eval mode inside model.train() (a fine-tuning habit), and Adagrad.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, Subset, random_split


class Rows(Dataset):
    def __init__(self, x, y):
        self.x = torch.tensor(x, dtype=torch.float64)
        self.y = torch.tensor(y)

    def __len__(self):
        return self.x.shape[0]

    def __getitem__(self, idx):
        return {"features": self.x[idx], "label": self.y[idx], "index": idx}


class Ragged(Dataset):
    def __init__(self, tokens):
        self.rows = [tokens[i * 5 : i * 5 + 1 + i % 4] for i in range(10)]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return torch.tensor(self.rows[i], dtype=torch.float64), i % 3


def pad_collate(batch):
    seqs, labels = zip(*batch)
    lengths = torch.tensor([len(s) for s in seqs])
    out = torch.zeros(len(seqs), int(lengths.max()), dtype=torch.float64)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = s
    return out, lengths, torch.tensor(labels)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 10), nn.BatchNorm1d(10), nn.ReLU(), nn.Linear(10, 3))
        self.seq_head = nn.Linear(2, 3)

    def forward(self, x):
        return self.body(x)


def build():
    return Net()


def train(model, data, steps):
    model = model.double()
    full = Rows(data["x"], data["y"])
    generator = torch.Generator().manual_seed(42)
    train_part, val_part = random_split(full, [18, 6], generator=generator)
    subset = Subset(full, list(range(0, 24, 2)))
    loader = DataLoader(full, batch_size=5, shuffle=False, drop_last=True)
    ragged = DataLoader(Ragged(data["tokens"] / 10.0), batch_size=4, collate_fn=pad_collate)
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05, lr_decay=1e-3, weight_decay=1e-4)
    losses = [float(len(train_part)), float(len(val_part)), float(len(subset)), float(len(loader))]
    losses.append(float(len(ragged)))
    while len(losses) < 5 + 3 * steps:
        model.train()
        model.body[1].eval()  # BatchNorm keeps its running statistics
        for batch in loader:
            x, y = batch["features"], batch["label"]
            assert x.dtype == torch.float64 and batch["index"].shape == (5,)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses += [loss.item(), float(batch["index"].sum()), float(loss.dtype == torch.float64)]
            if len(losses) >= 5 + 3 * steps:
                break
    for seqs, lengths, labels in ragged:
        mask = torch.arange(seqs.shape[1]).unsqueeze(0) < lengths.unsqueeze(1)
        feats = torch.stack([(seqs * mask).sum(1) / lengths, seqs.max(1).values], dim=1)
        losses.append(F.cross_entropy(model.seq_head(feats), labels).item())
    model.eval()
    with torch.no_grad():
        sub = next(iter(DataLoader(subset, batch_size=len(subset))))
        losses.append(F.cross_entropy(model(sub["features"]), sub["label"]).item())
        losses.append(model.body[1].running_mean.abs().sum().item())
    return losses
