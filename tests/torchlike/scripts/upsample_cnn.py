# An image classifier that resizes its inputs: F.interpolate (bilinear and nearest),
# global pooling by nn.AdaptiveAvgPool2d, torch.flatten, a StepLR schedule.
import torch
import torch.nn as nn
import torch.nn.functional as F


class ResizeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 6, kernel_size=3, stride=2, padding=1)
        self.block = nn.Sequential(nn.Conv2d(6, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU())
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(6 + 3 * 9, 3)

    def forward(self, x):
        x = F.interpolate(x, size=(12, 12), mode="bilinear", align_corners=False)
        h = F.relu(self.stem(x))  # [b, 6, 6, 6]
        h = h + self.block(h)
        h = F.interpolate(h, scale_factor=2, mode="nearest")
        feats = torch.flatten(self.avgpool(h), 1)
        thumb = F.adaptive_avg_pool2d(x, (3, 3))
        return self.fc(torch.cat([feats, torch.flatten(thumb, start_dim=1)], dim=1))


def build():
    return ResizeNet()


def train(model, data, steps):
    x = torch.from_numpy(data["images"])
    y = torch.from_numpy(data["label"]).long()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    losses = []
    for _ in range(steps):
        model.train()
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        up = F.interpolate(x, scale_factor=1.5, mode="bilinear", align_corners=True)
        losses.append(up.mean().item())
        losses.append(F.softmax(model(x), dim=1).max(dim=1).values.sum().item())
    return losses
