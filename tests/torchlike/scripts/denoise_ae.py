# A denoising autoencoder: inputs corrupted by NumPy noise and clamped to [0, 1],
# the clean input as target, MSELoss and Adam.
import numpy as np
import torch
import torch.nn as nn


class DenoisingAE(nn.Module):
    def __init__(self, d=6, h=4):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(d, 8), nn.ReLU(), nn.Linear(8, h), nn.ReLU())
        self.decoder = nn.Sequential(nn.Linear(h, 8), nn.ReLU(), nn.Linear(8, d), nn.Sigmoid())

    def forward(self, x):
        return self.decoder(self.encoder(x))


def build():
    return DenoisingAE()


def train(model, data, steps):
    rng = np.random.default_rng(3)
    clean = torch.sigmoid(torch.tensor(data["x"]))
    criterion = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-5)
    losses = []
    for _ in range(steps):
        for i in range(0, len(clean), 12):
            img = clean[i : i + 12]
            noise = torch.from_numpy(rng.normal(0, 0.3, img.shape).astype(np.float32))
            noisy = torch.clamp(img + noise, 0.0, 1.0)
            output = model(noisy)
            loss = criterion(output, img)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        noisy = (clean + 0.5).clamp(min=0.0, max=1.0)
        losses.append(criterion(model(noisy), clean).item())
        losses.append(torch.clamp(model(clean) - clean, -0.05, 0.05).abs().sum().item())
    return losses
