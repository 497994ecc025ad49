# A token tagger with the loss and metrics written by hand: targets padded with -100
# for ignore_index, a per-token loss with reduction='none' masked and averaged by hand,
# class weights, label smoothing, F.pad of ragged batches, one_hot targets, gather of the
# true class's log-probability, torch.where, scatter_add_ for per-class counts, topk
# accuracy, cumsum over positions, einsum and bmm in the model, .tolist() / .item().
import torch
import torch.nn as nn
import torch.nn.functional as F

CLASSES = 4


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(12, 8, padding_idx=0)
        self.mix = nn.Linear(8, 8)
        self.out = nn.Linear(8, CLASSES)

    def forward(self, tokens):
        h = self.emb(tokens)  # [B, T, D]
        scores = torch.einsum("btd,bsd->bts", h, self.mix(h)) / 8**0.5
        pad = (tokens == 0).unsqueeze(1)  # keys that are padding
        scores = scores.masked_fill(pad, -1e9)
        h = h + torch.bmm(scores.softmax(dim=-1), h)
        return self.out(torch.tanh(h))


def build():
    return Tagger()


def batch(data):
    tokens = data["tokens"]
    seqs = [torch.from_numpy(tokens[i * 9 : i * 9 + 3 + i % 4] % 11 + 1) for i in range(6)]
    width = max(len(s) for s in seqs)
    x = torch.stack([F.pad(s, (0, width - len(s)), value=0) for s in seqs])
    tags = torch.where(x % 3 == 0, x % CLASSES, (x * 2 + 1) % CLASSES)
    tags = tags.masked_fill(x == 0, -100)
    return x, tags


def train(model, data, steps):
    x, tags = batch(data)
    mask = tags != -100
    weight = torch.tensor([1.0, 0.5, 2.0, 1.5])
    smooth = nn.CrossEntropyLoss(weight=weight, ignore_index=-100, label_smoothing=0.1)
    per_token = nn.CrossEntropyLoss(reduction="none")
    opt = torch.optim.SGD(model.parameters(), lr=0.3, momentum=0.8, dampening=0.1)
    losses = [float(mask.sum().item()), float(mask.long().sum(1).max().item())]
    for _ in range(steps):
        logits = model(x)  # [B, T, C]
        a = smooth(logits.view(-1, CLASSES), tags.view(-1))
        safe = tags.clamp(min=0)
        b = per_token(logits.permute(0, 2, 1), safe)  # [B, T], classes on axis 1
        b = (b * mask).sum() / mask.sum()
        logp = F.log_softmax(logits, dim=-1)
        c = -(logp.gather(-1, safe.unsqueeze(-1)).squeeze(-1) * mask.float()).sum() / mask.sum()
        target = F.one_hot(safe, num_classes=CLASSES).float() * mask.unsqueeze(-1)
        d = (-(target * logp).sum(-1)).sum() / mask.sum()
        loss = a + 0.5 * b + 0.25 * (c + d)
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            pred = logits.argmax(-1)
            hits = ((pred == tags) & mask).sum().item()
            top2 = logits.topk(2, dim=-1).indices
            in_top2 = (top2 == safe.unsqueeze(-1)).any(-1) & mask
            counts = torch.zeros(CLASSES, dtype=torch.long).scatter_add_(
                0, pred[mask], torch.ones_like(pred[mask])
            )
            running = mask.long().cumsum(dim=1)[:, -1]
        losses += [loss.item(), a.item(), b.item(), c.item(), d.item(), float(hits)]
        losses += [float(in_top2.sum().item()), *map(float, counts.tolist())]
        losses += [float(v) for v in running.tolist()]
    return losses
