# A word-level language model as the classic example writes it: batchify into columns,
# truncated backpropagation through time with the hidden state detached, gradient
# clipping, a hand-written SGD update through p.data, perplexity with math.exp, and the
# best model kept by torch.save into a file object and loaded back at the end.
import io
import math

import torch
import torch.nn as nn


class RNNModel(nn.Module):
    def __init__(self, ntoken=11, ninp=8, nhid=12, nlayers=2):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nhid, self.nlayers, self.ntoken = nhid, nlayers, ntoken

    def forward(self, input, hidden):
        output, hidden = self.rnn(self.encoder(input), hidden)
        return self.decoder(output).view(-1, self.ntoken), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (
            weight.new_zeros(self.nlayers, bsz, self.nhid),
            weight.new_zeros(self.nlayers, bsz, self.nhid),
        )


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source, i, bptt=5):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len].reshape(-1)


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def evaluate(model, source, criterion, bsz):
    model.eval()
    total, hidden = 0.0, model.init_hidden(bsz)
    with torch.no_grad():
        for i in range(0, source.size(0) - 1, 5):
            data, targets = get_batch(source, i)
            output, hidden = model(data, hidden)
            hidden = repackage_hidden(hidden)
            total += len(data) * criterion(output, targets).item()
    return total / (len(source) - 1)


def build():
    return RNNModel()


def train(model, data, steps):
    tokens = torch.from_numpy(data["tokens"])
    train_data, val_data = batchify(tokens[:48], 4), batchify(tokens[48:], 2)
    criterion = nn.CrossEntropyLoss()
    lr, losses, best_val, best = 2.0, [], None, io.BytesIO()
    while len(losses) < steps:
        model.train()
        hidden = model.init_hidden(4)
        for i in range(0, train_data.size(0) - 1, 5):
            data, targets = get_batch(train_data, i)
            hidden = repackage_hidden(hidden)
            model.zero_grad()
            output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
            losses.append(loss.item())
            if len(losses) == steps:
                break
        val_loss = evaluate(model, val_data, criterion, 2)
        losses.append(math.exp(val_loss))
        if best_val is None or val_loss < best_val:
            best_val = val_loss
            best.seek(0)
            torch.save(model.state_dict(), best)
        else:
            lr /= 4.0
    best.seek(0)
    model.load_state_dict(torch.load(best))
    losses.append(evaluate(model, val_data, criterion, 2))
    return losses
