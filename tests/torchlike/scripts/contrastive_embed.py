# Metric learning on small vectors: an encoder whose reconstruction reuses its input
# layer's weight transposed (weight tying), F.normalize and cosine similarity, an
# InfoNCE loss over a similarity matrix with a temperature, TripletMarginLoss with
# anchors and negatives picked by index, CosineEmbeddingLoss, a KL term between two
# softmaxes (F.kl_div, batchmean, log_target), an input gradient from
# torch.autograd.grad, two backward passes over one graph with retain_graph=True, and
# gradients edited by hand (scaled, noise-free clamp) before SGD with Nesterov momentum.
import torch
import torch.nn as nn
import torch.nn.functional as F


class TiedEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(6, 10, bias=False)
        self.hidden = nn.Linear(10, 10)

    def forward(self, x):
        h = torch.tanh(self.inp(x))
        z = self.hidden(h)
        recon = F.linear(F.relu(z), self.inp.weight.t())  # the same matrix, transposed
        return z, recon


def build():
    return TiedEncoder()


def train(model, data, steps):
    x = torch.from_numpy(data["x"])
    labels = torch.from_numpy(data["y"])
    view = x.flip(1) * 0.5 + x * 0.5  # a second "view" of every row
    order = torch.argsort(labels, stable=True)
    anchor, positive = order[:8], order.roll(1)[:8]
    negative = order.flip(0)[:8]
    opt = torch.optim.SGD(
        model.parameters(),
        lr=0.05,
        momentum=0.9,
        nesterov=True,
        weight_decay=1e-4,
    )
    triplet = nn.TripletMarginLoss(margin=0.5, p=2)
    cosine = nn.CosineEmbeddingLoss(margin=0.1)
    losses = []
    for _ in range(steps):
        z1, recon = model(x)
        z2, _ = model(view)
        a, b = F.normalize(z1, dim=1), F.normalize(z2, p=2.0, dim=-1)
        sim = a @ b.T / 0.5
        nce = F.cross_entropy(sim, torch.arange(len(x)))
        trip = triplet(z1[anchor], z1[positive], z1[negative])
        sign = torch.where(labels[anchor] == labels[negative], 1, -1)
        cos = cosine(z1[anchor], z1[negative], sign)
        kl = F.kl_div(
            F.log_softmax(z1, -1),
            F.log_softmax(z2.detach(), -1),
            reduction="batchmean",
            log_target=True,
        )
        rec = F.mse_loss(recon, x)
        loss = nce + trip + cos + 0.1 * kl + rec
        opt.zero_grad()
        # the reconstruction's gradient alone first, the graph kept for the full loss
        rec.backward(retain_graph=True)
        rec_norm = model.inp.weight.grad.norm().item()
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            if p.grad is not None:
                p.grad.mul_(0.5).clamp_(-1.0, 1.0)
        opt.step()
        probe = x[:4].clone().requires_grad_(True)
        (g,) = torch.autograd.grad(model(probe)[0].pow(2).sum(), probe)
        agree = F.cosine_similarity(z1, z2, dim=1).mean()
        losses += [loss.item(), nce.item(), trip.item(), cos.item(), kl.item(), rec.item()]
        losses += [rec_norm, g.abs().sum().item(), agree.item()]
    return losses
