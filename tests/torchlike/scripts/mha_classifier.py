# A small Transformer-style classifier written from parts: token and learned position
# embeddings (nn.Embedding over torch.arange(...).unsqueeze(0).expand), an
# nn.MultiheadAttention(batch_first=True) block with a key_padding_mask and its
# averaged attention weights read back, a pre-norm residual MLP, mean pooling over the
# unpadded positions, AdamW with no weight decay on biases and 1-d weights, a linear
# warmup then decay in LambdaLR stepped per batch, and gradient clipping.
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x, pad):
        h = self.ln1(x)
        a, w = self.attn(h, h, h, key_padding_mask=pad, need_weights=True)
        x = x + a
        return x + self.ff(self.ln2(x)), w


class Classifier(nn.Module):
    def __init__(self, vocab=12, d=8, heads=2, max_len=10, classes=3):
        super().__init__()
        self.tok = nn.Embedding(vocab, d, padding_idx=0)
        self.pos = nn.Embedding(max_len, d)
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(2)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, ids):
        b, t = ids.shape
        pad = ids == 0
        pos = torch.arange(t, device=ids.device).unsqueeze(0).expand(b, t)
        x = self.tok(ids) * math.sqrt(self.tok.embedding_dim) + self.pos(pos)
        weights = []
        for block in self.blocks:
            x, w = block(x, pad)
            weights.append(w)
        keep = (~pad).unsqueeze(-1).float()
        pooled = (self.norm(x) * keep).sum(1) / keep.sum(1)
        return self.head(pooled), torch.stack(weights)


def build():
    return Classifier()


def train(model, data, steps):
    tokens = data["tokens"]
    rows = [torch.tensor(tokens[i * 7 : i * 7 + 4 + i % 5] % 11 + 1) for i in range(6)]
    ids = nn.utils.rnn.pad_sequence(rows, batch_first=True, padding_value=0)
    labels = torch.tensor(data["label"])
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.ndim < 2 or name.endswith(".bias") else decay).append(p)
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
        lr=3e-3,
        betas=(0.9, 0.98),
        eps=1e-9,
    )
    warmup = 3

    def lr_lambda(step):
        if step < warmup:
            return float(step + 1) / warmup
        return max(0.1, 1.0 - (step - warmup) / 10)

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda)
    # sizes, not counts: torch keeps q, k and v in one in_proj_weight, Scellis in three
    losses = [float(sum(p.numel() for p in decay)), float(sum(p.numel() for p in no_decay))]
    for _ in range(steps):
        model.train()
        logits, attn = model(ids)
        loss = F.cross_entropy(logits, labels, label_smoothing=0.05)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        total = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5, norm_type=2.0)
        opt.step()
        sched.step()
        # attention on padded keys is zero; each query's weights sum to one
        masked = (
            attn[:, :, :, ids[0] == 0].sum().item() + (attn * (ids == 0)[:, None, :]).sum().item()
        )
        losses += [loss.item(), total.item(), sched.get_last_lr()[0], masked]
        losses.append(attn.sum(-1).mean().item())
    model.eval()
    with torch.no_grad():
        logits, _ = model(ids)
        losses.append((logits.argmax(-1) == labels).float().mean().item())
    return losses
