# The char-RNN name classifier: a hand-written RNN cell (input and hidden joined by
# torch.cat), LogSoftmax + NLLLoss, one name at a time, SGD by hand on p.data.
import torch
import torch.nn as nn

N_LETTERS = 11


class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.i2o = nn.Linear(input_size + hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, input, hidden):
        combined = torch.cat((input, hidden), 1)
        hidden = torch.tanh(self.i2h(combined))
        output = self.softmax(self.i2o(combined))
        return output, hidden

    def initHidden(self):
        return torch.zeros(1, self.hidden_size)


def line_to_tensor(codes):
    tensor = torch.zeros(len(codes), 1, N_LETTERS)
    for li, c in enumerate(codes):
        tensor[li][0][int(c)] = 1
    return tensor


def build():
    return RNN(N_LETTERS, 8, 3)


def train(model, data, steps):
    tokens = data["tokens"]
    names = [tokens[i : i + 3 + i % 4] for i in range(0, 48, 8)]
    labels = [int(v) for v in data["label"]]
    criterion = nn.NLLLoss()
    lr = 0.05
    losses = []
    for step in range(steps):
        k = step % len(names)
        line_tensor = line_to_tensor(names[k])
        category_tensor = torch.tensor([labels[k]], dtype=torch.long)
        hidden = model.initHidden()
        model.zero_grad()
        for i in range(line_tensor.size()[0]):
            output, hidden = model(line_tensor[i], hidden)
        loss = criterion(output, category_tensor)
        loss.backward()
        for p in model.parameters():
            p.data.add_(p.grad.data, alpha=-lr)
        losses.append(loss.item())
        top_n, top_i = output.topk(1)
        losses.append(float(top_i[0].item()))
    return losses
