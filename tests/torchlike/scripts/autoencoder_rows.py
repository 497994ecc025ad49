# An autoencoder over unlabelled rows as quick tutorials write it: TensorDataset of one
# tensor, batches read as batch[0] and unpacked as (xb,), an encoder and a decoder
# built from a list of sizes with nn.Sequential(*layers), layers walked through
# model._modules and named_children to log their widths, the bottleneck read through
# a forward hook, torch.cuda housekeeping calls that do nothing on a CPU, and the
# reconstruction error per row with reduction='none'.
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def mlp(sizes, act=nn.ReLU):
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), act()]
    return nn.Sequential(*layers[:-1])


class AutoEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = mlp([6, 10, 3])
        self.decoder = mlp([3, 10, 6], act=nn.Tanh)

    def forward(self, x):
        return self.decoder(self.encoder(x))


def build():
    return AutoEncoder()


def train(model, data, steps):
    x = torch.from_numpy(data["x"])
    loader = DataLoader(TensorDataset(x), batch_size=8, shuffle=False)
    criterion = nn.MSELoss()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    widths = [m.out_features for m in model.encoder._modules.values() if isinstance(m, nn.Linear)]
    names = [name for name, _ in model.named_children()]
    codes = {}
    model.encoder.register_forward_hook(lambda mod, inp, out: codes.__setitem__("z", out.detach()))
    losses = [float(sum(widths)), float(len(names))]
    step = 0
    while step < steps:
        for batch in loader:
            xb = batch[0]
            loss = criterion(model(xb), xb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses += [loss.item(), codes["z"].abs().mean().item()]
            step += 1
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        torch.cuda.empty_cache()
    model.eval()
    with torch.no_grad():
        per_row = torch.cat([nn.functional.mse_loss(model(xb), xb, reduction="none").mean(1)
                             for (xb,) in loader])  # fmt: skip
    return losses + [per_row.max().item(), float(per_row.argmax().item()), float(len(per_row))]
