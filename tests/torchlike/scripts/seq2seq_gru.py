# A GRU encoder-decoder that learns to reverse token sequences: a bidirectional encoder
# whose last hidden states are joined with torch.cat, a decoder stepped one token at a
# time with teacher forcing on a fixed schedule, and greedy argmax decoding to evaluate.
import torch
import torch.nn as nn

SOS, VOCAB = 0, 11


class Seq2Seq(nn.Module):
    def __init__(self, emb=6, hid=8):
        super().__init__()
        self.src_emb = nn.Embedding(VOCAB, emb)
        self.encoder = nn.GRU(emb, hid, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(2 * hid, hid)
        self.tgt_emb = nn.Embedding(VOCAB, emb)
        self.decoder = nn.GRU(emb, hid, batch_first=True)
        self.out = nn.Linear(hid, VOCAB)

    def encode(self, src):
        _, h = self.encoder(self.src_emb(src))  # h: [2, B, hid]
        return torch.tanh(self.bridge(torch.cat((h[-2], h[-1]), dim=1))).unsqueeze(0)

    def forward(self, src, tgt, teacher_forcing):
        hidden = self.encode(src)
        inp = torch.full((src.size(0), 1), SOS, dtype=torch.long)
        outputs = []
        for t in range(tgt.size(1)):
            out, hidden = self.decoder(self.tgt_emb(inp), hidden)
            logits = self.out(out.squeeze(1))
            outputs.append(logits)
            inp = tgt[:, t : t + 1] if teacher_forcing else logits.argmax(dim=1, keepdim=True)
        return torch.stack(outputs, dim=1)


def build():
    return Seq2Seq()


def train(model, data, steps):
    src = torch.from_numpy(data["tokens"]).view(8, 8)[:, :5].clamp(min=1)
    tgt = src.flip(1)
    opt = torch.optim.Adam(model.parameters(), lr=2e-2)
    criterion = nn.CrossEntropyLoss()
    losses = []
    for step in range(steps):
        model.train()
        logits = model(src, tgt, teacher_forcing=step % 3 != 2)
        loss = criterion(logits.reshape(-1, VOCAB), tgt.reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        opt.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        logits = model(src, tgt, teacher_forcing=False)
        pred = logits.argmax(-1)
        losses += [logits.abs().sum().item(), (pred == tgt).float().mean().item()]
        losses.append(float(pred.sum().item()))
    return losses
