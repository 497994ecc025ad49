# A training loop in the style of older PyTorch tutorials that still runs today:
# autograd.Variable around batches, x.type(torch.FloatTensor), tensors made with
# torch.FloatTensor / LongTensor, .view(-1, n) flattening, torch.max(outputs.data, 1),
# running_loss reported every few steps with %-formatting, a network built with
# super(Net, self).__init__(), and weights initialised with nn.init in a loop over
# self.modules().
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()  # noqa: UP008 (the old spelling is the habit)
        self.conv = nn.Conv2d(3, 4, kernel_size=3, padding=1)
        self.fc1 = nn.Linear(4 * 4 * 4, 12)
        self.fc2 = nn.Linear(12, 3)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.constant_(m.bias, 0.0)
            elif isinstance(m, nn.Linear):
                nn.init.constant_(m.bias, 0.01)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv(x)), 2)
        x = x.view(-1, 4 * 4 * 4)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


def build():
    return Net()


def train(model, data, steps):
    images = torch.FloatTensor(np.asarray(data["images"]))
    labels = torch.LongTensor([int(v) for v in data["label"]])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.5)
    losses, running_loss, log = [], 0.0, []
    for i in range(steps):
        inputs = Variable(images[(i % 2) * 3 : (i % 2) * 3 + 3].type(torch.FloatTensor))
        target = Variable(labels[(i % 2) * 3 : (i % 2) * 3 + 3])
        optimizer.zero_grad()
        outputs = model(inputs)
        loss = F.nll_loss(outputs, target)
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
        _, predicted = torch.max(outputs.data, 1)
        losses += [loss.item(), float((predicted == target).sum().item())]
        if i % 2 == 1:
            log.append("[%d] loss: %.3f" % (i + 1, running_loss / 2))  # noqa: UP031
            losses.append(float(log[-1].split(": ")[1]))
            running_loss = 0.0
    return losses
