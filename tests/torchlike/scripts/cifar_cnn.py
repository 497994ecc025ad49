# A small CIFAR-style CNN: conv / batch norm / max pool blocks, SGD with momentum.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        # no conv bias before BatchNorm (its mean subtraction cancels it), as in ResNets
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(8, 12, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(12)
        self.gap = nn.AdaptiveAvgPool2d((2, 2))
        # p=0: the two libraries draw different masks, and the steps must compare
        self.drop = nn.Dropout(0.0)
        self.fc1 = nn.Linear(12 * 2 * 2, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = self.gap(F.relu(self.bn2(self.conv2(x))))
        x = torch.flatten(x, 1)
        x = self.drop(F.relu(self.fc1(x)))
        return self.fc2(x)


def build():
    return Net()


def train(model, data, steps):
    x = torch.tensor(data["images"])
    y = torch.tensor(data["label"]).long()
    criterion = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    losses = []
    for _ in range(steps):
        model.train()
        opt.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        _, predicted = torch.max(model(x).data, 1)
        losses.append(float((predicted == y).sum().item()))
        losses.append(model.bn2.running_var.sum().item())
    return losses
