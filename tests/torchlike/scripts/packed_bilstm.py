# A sentence classifier over a bidirectional LSTM as tutorials write one: the usual
# device line (cuda if available, else cpu) with .to(device) on model, loss and
# batches, sequences sorted by length and packed with pack_padded_sequence (and once
# unsorted with enforce_sorted=False), an explicit (h0, c0), the last forward and
# backward hidden states joined, pad_packed_sequence for a mean over real steps, AMP
# written to be off on a CPU (autocast and GradScaler with enabled=use_amp), Adam with
# amsgrad, and evaluation under torch.inference_mode().
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
use_amp = device.type == "cuda"


class BiLSTMClassifier(nn.Module):
    def __init__(self, vocab=12, emb=6, hidden=8, classes=3):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb, padding_idx=0)
        self.lstm = nn.LSTM(emb, hidden, num_layers=1, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(4 * hidden, classes)

    def forward(self, text, lengths, sorted_=True):
        batch = text.size(0)
        h0 = torch.zeros(2 * self.lstm.num_layers, batch, self.lstm.hidden_size, device=text.device)
        c0 = torch.zeros_like(h0)
        packed = pack_padded_sequence(
            self.embedding(text), lengths.cpu(), batch_first=True, enforce_sorted=sorted_
        )
        out, (hn, cn) = self.lstm(packed, (h0, c0))
        last = torch.cat((hn[-2, :, :], hn[-1, :, :]), dim=1)
        unpacked, lens = pad_packed_sequence(out, batch_first=True)
        mean = unpacked.sum(1) / lens.unsqueeze(1).to(unpacked.dtype)
        return self.fc(torch.cat([last, mean], dim=1))


def build():
    return BiLSTMClassifier()


def make_batch(data):
    tokens = data["tokens"]
    seqs = [torch.tensor(tokens[i * 8 : i * 8 + 2 + (5 * i) % 6] % 11 + 1) for i in range(6)]
    lengths = torch.tensor([len(s) for s in seqs])
    lengths, order = lengths.sort(descending=True)
    text = pad_sequence([seqs[i] for i in order.tolist()], batch_first=True)
    labels = torch.tensor(data["label"])[order]
    return text, lengths, labels


def train(model, data, steps):
    model = model.to(device)
    text, lengths, labels = (t.to(device) for t in make_batch(data))
    criterion = nn.CrossEntropyLoss().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, amsgrad=True)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    losses = []
    for _ in range(steps):
        model.train()
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            logits = model(text, lengths)
            loss = criterion(logits, labels)
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        losses += [loss.item(), norm.item()]
        model.eval()
        with torch.inference_mode():
            shuffled = torch.tensor([3, 0, 5, 1, 4, 2])
            out = model(text[shuffled], lengths[shuffled], sorted_=False)
            losses.append(F.cross_entropy(out, labels[shuffled]).item())
            losses.append((out.argmax(dim=1) == labels[shuffled]).float().mean().item())
    return losses
