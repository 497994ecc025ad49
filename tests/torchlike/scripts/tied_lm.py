# A tiny GPT-style language model with the habits of minGPT/nanoGPT: the output head's
# weight tied to the token embedding (self.lm_head.weight = self.wte.weight), so
# parameters() lists it once; weights initialised through self.apply(self._init_weights)
# with normal_(std=0.02) and zeros_; a causal mask registered as a non-persistent tril
# buffer and sliced to the sequence; attention written with view/transpose and
# masked_fill(float('-inf')); param counts that skip the tied head; AdamW groups split by
# module type (decay on Linear weights only); and cross-entropy over flattened logits.
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head, self.n_embd = n_head, n_embd
        mask = torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size)
        self.register_buffer("bias", mask, persistent=False)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class GPT(nn.Module):
    def __init__(self, vocab=11, n_embd=8, n_head=2, block_size=6):
        super().__init__()
        self.block_size = block_size
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size)
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)
        self.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        x = x + self.attn(self.ln_1(x))
        logits = self.lm_head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


def build():
    return GPT()


def configure_optimizers(model, weight_decay, learning_rate):
    decay, no_decay = set(), set()
    for mn, m in model.named_modules():
        for pn, _ in m.named_parameters(recurse=False):
            fpn = f"{mn}.{pn}" if mn else pn
            if pn.endswith("bias"):
                no_decay.add(fpn)
            elif pn.endswith("weight") and isinstance(m, nn.Linear):
                decay.add(fpn)
            else:
                no_decay.add(fpn)
    param_dict = dict(model.named_parameters())
    no_decay -= decay  # the tied weight is a Linear's too
    groups = [
        {"params": [param_dict[pn] for pn in sorted(decay) if pn in param_dict],
         "weight_decay": weight_decay},
        {"params": [param_dict[pn] for pn in sorted(no_decay) if pn in param_dict],
         "weight_decay": 0.0},
    ]  # fmt: skip
    return torch.optim.AdamW(groups, lr=learning_rate, betas=(0.9, 0.95))


def train(model, data, steps):
    tokens = torch.from_numpy(data["tokens"])
    xs = torch.stack([tokens[i : i + 6] for i in range(0, 48, 8)])
    ys = torch.stack([tokens[i + 1 : i + 7] for i in range(0, 48, 8)])
    n_params = sum(p.numel() for p in model.parameters())
    opt = configure_optimizers(model, 0.1, 1e-2)
    losses = [float(n_params), float(len(list(model.parameters()))), float(len(model.state_dict()))]
    losses.append(float(model.lm_head.weight is model.wte.weight))
    for _ in range(steps):
        _, loss = model(xs, ys)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    losses.append((model.wte.weight - model.lm_head.weight).abs().sum().item())
    return losses
