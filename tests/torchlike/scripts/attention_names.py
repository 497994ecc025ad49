# Habits that go by parameter names and attributes of torch's attention layers: AdamW
# with weight decay on every matrix but the norms' and biases' (chosen by name), the
# first layer's attention frozen by name, an L2 penalty on `linear1.weight` reached by
# attribute, and a bare MultiheadAttention whose `out_proj` and `in_proj_weight` are
# read directly. The group sizes lead the returned values, so they are compared too.
import torch
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(3, 8)
        layer = nn.TransformerEncoderLayer(
            8, 2, dim_feedforward=16, dropout=0.0, batch_first=True, norm_first=True
        )
        self.enc = nn.TransformerEncoder(layer, num_layers=2)
        self.mix = nn.MultiheadAttention(8, 2, batch_first=True)
        self.out = nn.Linear(8, 3)

    def forward(self, x):
        h = self.enc(self.inp(x))
        m, _ = self.mix(h, h, h, need_weights=False)
        return self.out((h + m).mean(dim=1))


def build():
    return Tagger()


def train(model, data, steps):
    x = torch.tensor(data["seq"])
    y = torch.tensor(data["label"]).long()
    for name, p in model.named_parameters():
        if name.startswith("enc.layers.0.self_attn."):
            p.requires_grad_(False)
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    no_decay = [p for n, p in named if "norm" in n or n.endswith("bias")]
    decay = [p for n, p in named if not ("norm" in n or n.endswith("bias"))]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
        lr=0.01,
    )
    first = model.enc.layers[1]
    shapes = [tuple(model.mix.in_proj_weight.shape), tuple(model.mix.out_proj.weight.shape)]
    losses = [float(len(decay)), float(len(no_decay)), float(sum(s[0] for s in shapes))]
    for _ in range(steps):
        loss = nn.functional.cross_entropy(model(x), y)
        loss = loss + 1e-3 * first.linear1.weight.square().sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses
