# The shape of pytorch/examples' MNIST script on tiny images: conv layers with
# F.max_pool2d and torch.flatten, log_softmax + F.nll_loss, Adadelta with StepLR(gamma=0.7)
# stepped per epoch, a train() that logs every batch_idx % log_interval, and a test()
# that sums nll_loss(reduction='sum'), takes argmax(dim=1, keepdim=True) and counts
# pred.eq(target.view_as(pred)).sum().item(), all driven by args in an argparse-like
# namespace and a device picked at the top.
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 3, 1)
        self.conv2 = nn.Conv2d(6, 8, 3, 1)
        self.dropout1 = nn.Dropout(0.0)
        self.fc1 = nn.Linear(8 * 2 * 2, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        output = F.log_softmax(self.fc2(x), dim=1)
        return output


def build():
    return Net()


def train_epoch(args, model, device, train_loader, optimizer, epoch, log):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            log.append(loss.item())
            log.append(100.0 * batch_idx / len(train_loader))


def test(model, device, test_loader, log):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    test_loss /= len(test_loader.dataset)
    log += [test_loss, 100.0 * correct / len(test_loader.dataset)]


def train(model, data, steps):
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--gamma", type=float, default=0.7)
    parser.add_argument("--log-interval", type=int, default=1)
    args = parser.parse_args([])
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    images = torch.tensor(data["images"])
    labels = torch.tensor(data["label"]).long()
    train_loader = DataLoader(TensorDataset(images[:4], labels[:4]), batch_size=args.batch_size)
    test_loader = DataLoader(TensorDataset(images, labels), batch_size=3)
    model = model.to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    log = []
    for epoch in range(1, steps + 1):
        train_epoch(args, model, device, train_loader, optimizer, epoch, log)
        test(model, device, test_loader, log)
        scheduler.step()
    return log
