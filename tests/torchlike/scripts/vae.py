# A small VAE: reparameterisation, a KL term, binary cross-entropy on sigmoid outputs.
# The noise of each step comes in from NumPy (random draws differ between libraries);
# torch.randn_like is still called where a tutorial samples from the prior.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class VAE(nn.Module):
    def __init__(self, d=6, h=10, z=3):
        super().__init__()
        self.enc = nn.Linear(d, h)
        self.mu = nn.Linear(h, z)
        self.logvar = nn.Linear(h, z)
        self.dec1 = nn.Linear(z, h)
        self.dec2 = nn.Linear(h, d)

    def encode(self, x):
        h = F.relu(self.enc(x))
        return self.mu(h), self.logvar(h)

    def reparameterize(self, mu, logvar, eps=None):
        std = torch.exp(0.5 * logvar)
        if eps is None:
            eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        return torch.sigmoid(self.dec2(torch.relu(self.dec1(z))))

    def forward(self, x, eps=None):
        mu, logvar = self.encode(x.view(-1, 6))
        return self.decode(self.reparameterize(mu, logvar, eps)), mu, logvar


def loss_function(recon, x, mu, logvar):
    bce = F.binary_cross_entropy(recon, x, reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld


def build():
    return VAE()


def train(model, data, steps):
    x = torch.sigmoid(torch.from_numpy(data["x"]))
    noise = torch.from_numpy(data["noise"])  # [steps, 24, 3]
    loader = DataLoader(TensorDataset(x, torch.arange(len(x))), batch_size=8)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    model.train()
    while len(losses) < steps:
        for xb, idx in loader:
            opt.zero_grad()
            recon, mu, logvar = model(xb, noise[len(losses)][idx])
            loss = loss_function(recon, xb, mu, logvar)
            loss.backward()
            opt.step()
            losses.append(loss.item() / len(xb))
            if len(losses) == steps:
                break
    model.eval()
    with torch.no_grad():
        mu, logvar = model.encode(x)
        recon = model.decode(mu)
        losses.append(F.mse_loss(recon, x).item())
        sample = model.decode(torch.randn_like(mu))
        losses.append(float(sample.shape[0] * sample.shape[1]))
        losses.append(float(((sample > 0) & (sample < 1)).all()))
    return losses
