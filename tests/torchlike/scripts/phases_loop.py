# The transfer-learning tutorial's loop: for phase in ['train', 'val'] with
# model.train()/model.eval(), torch.set_grad_enabled(phase == 'train'),
# running_loss += loss.item() * inputs.size(0), running_corrects from
# torch.sum(preds == labels.data) and .double() accuracy, a StepLR per epoch; then a
# hidden state detached in place (detach_) and a parameter nudged through .data.
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(6, 12), nn.ELU(alpha=0.5), nn.Linear(12, 12))
        self.act = nn.Hardtanh(-2.0, 2.0)
        self.fc = nn.Linear(12, 3)

    def forward(self, x):
        return self.fc(self.act(self.features(x)))


def build():
    return Net()


def train(model, data, steps):
    x, y = torch.from_numpy(data["x"]), torch.from_numpy(data["y"])
    parts = {"train": (x[:16], y[:16]), "val": (x[16:], y[16:])}
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.1)
    history = []
    for _epoch in range(steps):
        for phase in ["train", "val"]:
            if phase == "train":
                model.train()
            else:
                model.eval()
            running_loss, running_corrects = 0.0, 0
            xs, ys = parts[phase]
            for start in range(0, len(xs), 4):
                inputs, labels = xs[start : start + 4], ys[start : start + 4]
                optimizer.zero_grad()
                with torch.set_grad_enabled(phase == "train"):
                    outputs = model(inputs)
                    _, preds = torch.max(outputs, 1)
                    loss = criterion(outputs, labels)
                    if phase == "train":
                        loss.backward()
                        optimizer.step()
                running_loss += loss.item() * inputs.size(0)
                running_corrects += torch.sum(preds == labels.data)
            if phase == "train":
                scheduler.step()
            epoch_loss = running_loss / len(xs)
            epoch_acc = running_corrects.double() / len(xs)
            history += [epoch_loss, epoch_acc.item(), float(torch.is_grad_enabled())]
    # a state carried across chunks, cut from the graph in place
    h = torch.zeros(4, 12)
    for chunk in range(3):
        h = torch.tanh(model.features(x[chunk * 4 : chunk * 4 + 4]) + h)
        loss = h.pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        h.detach_()
        with torch.no_grad():
            model.fc.bias.data += 0.01 * chunk
        history += [loss.item(), float(h.requires_grad)]
    return history + [model.fc.bias.sum().item()]
