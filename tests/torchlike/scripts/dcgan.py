# A small DCGAN: transposed-conv generator, strided-conv discriminator, BCELoss,
# one optimizer per net, fakes detached for the discriminator's step.
# Latent codes come in from NumPy (random draws differ between libraries).
import numpy as np
import torch
import torch.nn as nn


class Generator(nn.Module):
    def __init__(self, nz=4, ngf=6):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 2, 2, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf, 3, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, z):
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self, ndf=6):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(3, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 2, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, x):
        return self.main(x).view(-1, 1).squeeze(1)


class GAN(nn.Module):
    def __init__(self):
        super().__init__()
        self.netG = Generator()
        self.netD = Discriminator()


def build():
    return GAN()


def train(model, data, steps):
    netG, netD = model.netG, model.netD
    rng = np.random.default_rng(5)
    real = torch.tanh(torch.from_numpy(data["images"]))
    criterion = nn.BCELoss()
    optD = torch.optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optG = torch.optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))
    real_label, fake_label = 1.0, 0.0
    losses = []
    for _ in range(steps):
        b = real.size(0)
        netD.zero_grad()
        label = torch.full((b,), real_label, dtype=torch.float)
        errD_real = criterion(netD(real), label)
        errD_real.backward()
        noise = torch.from_numpy(rng.standard_normal((b, 4, 1, 1)).astype(np.float32))
        fake = netG(noise)
        label.fill_(fake_label)
        errD_fake = criterion(netD(fake.detach()), label)
        errD_fake.backward()
        optD.step()
        netG.zero_grad()
        label.fill_(real_label)
        output = netD(fake)
        errG = criterion(output, label)
        errG.backward()
        optG.step()
        losses += [(errD_real + errD_fake).item(), errG.item(), output.mean().item()]
    return losses
