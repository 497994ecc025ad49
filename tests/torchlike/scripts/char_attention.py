# A character LM with hand-written causal attention (a tril buffer, masked_fill).
import math

import torch
import torch.nn as nn
from torch.nn import functional as F


class Head(nn.Module):
    def __init__(self, d, block):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.proj = nn.Linear(d, d)
        self.register_buffer("tril", torch.tril(torch.ones(block, block)), persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C))
        att = att.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        return self.proj(att @ v)


class CharLM(nn.Module):
    def __init__(self, vocab=11, d=16, block=8):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(block, d)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.att = Head(d, block)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.out = nn.Linear(d, vocab)

    def forward(self, idx, targets=None):
        B, T = idx.shape
        x = self.tok(idx) + self.pos(torch.arange(T))
        x = x + self.att(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        logits = self.out(x)
        loss = F.cross_entropy(logits.view(B * T, -1), targets.view(B * T))
        return logits, loss


def build():
    return CharLM()


def train(model, data, steps):
    text = torch.tensor(data["tokens"], dtype=torch.long)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for step in range(steps):
        starts = [(step * 5 + 3 * i) % (len(text) - 9) for i in range(4)]
        xb = torch.stack([text[s : s + 8] for s in starts])
        yb = torch.stack([text[s + 1 : s + 9] for s in starts])
        _, loss = model(xb, yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    with torch.no_grad():
        logits, _ = model(xb, yb)
        top = logits[:, -1, :].topk(3, dim=-1).values
        losses.append(top.sum().item())
    return losses
