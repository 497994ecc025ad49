# A tiny translation model on nn.Transformer: token embeddings scaled by sqrt(d),
# a sinusoidal positional buffer, a causal target mask from
# generate_square_subsequent_mask and key padding masks for source and target.
import math

import torch
import torch.nn as nn

PAD, BOS = 0, 1
VOCAB = 11


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=16):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):  # [seq, batch, d]
        return x + self.pe[: x.size(0)]


class Seq2SeqTransformer(nn.Module):
    def __init__(self, d_model=8):
        super().__init__()
        self.d_model = d_model
        self.src_tok = nn.Embedding(VOCAB, d_model)
        self.tgt_tok = nn.Embedding(VOCAB, d_model)
        self.pos = PositionalEncoding(d_model)
        self.transformer = nn.Transformer(
            d_model=d_model,
            nhead=2,
            num_encoder_layers=1,
            num_decoder_layers=1,
            dim_feedforward=16,
            dropout=0.0,
        )
        self.generator = nn.Linear(d_model, VOCAB)

    def forward(self, src, tgt, tgt_mask, src_padding_mask, tgt_padding_mask):
        src_emb = self.pos(self.src_tok(src) * math.sqrt(self.d_model))
        tgt_emb = self.pos(self.tgt_tok(tgt) * math.sqrt(self.d_model))
        outs = self.transformer(
            src_emb,
            tgt_emb,
            tgt_mask=tgt_mask,
            src_key_padding_mask=src_padding_mask,
            tgt_key_padding_mask=tgt_padding_mask,
            memory_key_padding_mask=src_padding_mask,
        )
        return self.generator(outs)


def create_mask(src, tgt):
    tgt_seq_len = tgt.shape[0]
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt_seq_len)
    src_padding_mask = (src == PAD).transpose(0, 1)
    tgt_padding_mask = (tgt == PAD).transpose(0, 1)
    return tgt_mask, src_padding_mask, tgt_padding_mask


def build():
    return Seq2SeqTransformer()


def batch(tokens):
    # four sentences of lengths 5, 4, 3, 5 (seq-first), padded with PAD; the target
    # is the source reversed, behind a BOS
    lengths = [5, 4, 3, 5]
    src = torch.zeros(5, 4, dtype=torch.long)
    tgt = torch.zeros(6, 4, dtype=torch.long)
    for b, n in enumerate(lengths):
        words = [int(t) % (VOCAB - 2) + 2 for t in tokens[b * 5 : b * 5 + n]]
        src[:n, b] = torch.tensor(words)
        tgt[0, b] = BOS
        tgt[1 : n + 1, b] = torch.tensor(words[::-1])
    return src, tgt


def train(model, data, steps):
    src, tgt = batch(data["tokens"])
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3, betas=(0.9, 0.98), eps=1e-9)
    losses = []
    for _ in range(steps):
        model.train()
        tgt_input = tgt[:-1, :]
        tgt_mask, src_pad, tgt_pad = create_mask(src, tgt_input)
        logits = model(src, tgt_input, tgt_mask, src_pad, tgt_pad)
        optimizer.zero_grad()
        tgt_out = tgt[1:, :]
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        memory = model.transformer.encoder(
            model.pos(model.src_tok(src) * math.sqrt(model.d_model)),
            src_key_padding_mask=(src == PAD).transpose(0, 1),
        )
        losses.append(memory.abs().mean().item())
    return losses
