"""A tiny character LM for the generation tests, and the sampling procedure in PyTorch.

``torch_choose`` is the oracle of ``run.generate.Sampling.choose``: the same procedure
(temperature, top-k, top-p, inverse CDF with one uniform draw) written with torch's
own ops in float64, fed the uniforms of the project's Philox ``sample`` stream.
"""

from __future__ import annotations

import random
from pathlib import Path

import torch

from scellis.base.rng import Generator
from scellis.model.build import RecordModel
from scellis.sml import parse

ALPHABET = "abcdefgh \n"

RECORD = """\
model: test/tiny_char_lm@1
inputs:
  ids: { shape: [batch, @CTX@], dtype: i32 }
blocks:
  tok: { block_id: nn/embedding, in: ids, num_embeddings: @V@, embedding_dim: 16 }
@POS@
  body:
    block_id: nn/transformer
    in: @BODY_IN@
    d_model: 16
    num_heads: 2
    num_layers: 2
    kind: @KIND@
    rotary: @ROTARY@
  head: { block_id: nn/lm_head, in: body, d_model: 16, vocab_size: @V@ }
outputs: [head]
optimizer: { block_id: training/optimizer/adamw, lr: 1.0e-2 }
loss: { block_id: training/loss/cross_entropy }
epochs: 1
batch_size: 4
determinism_tier: debug
seed: 3
data:
  source: text.txt
  format: text
  tokenizer: char
  context: @CTX@
  stride: 4
  val_fraction: 0.2
"""

POSITIONS = {
    "learned": "  pos: { block_id: nn/learned_position, in: tok, max_len: @CTX@, dim: 16 }",
    "sinusoidal": "  pos: { block_id: nn/sinusoidal_position, in: tok, dim: 16 }",
    "rotary": "",
}


def record_text(position: str = "learned", context: int = 8, kind: str = "decoder") -> str:
    body_in = "tok" if position == "rotary" else "pos"
    text = RECORD.replace("@POS@", POSITIONS[position]).replace("@BODY_IN@", body_in)
    text = text.replace("@KIND@", kind).replace("@ROTARY@", str(position == "rotary").lower())
    return text.replace("@CTX@", str(context)).replace("@V@", str(len(ALPHABET)))


def write_text(folder: Path) -> None:
    rng = random.Random(7)
    body = "".join(rng.choice(ALPHABET) for _ in range(400))
    (folder / "text.txt").write_text(ALPHABET + body)  # every character appears


def write_lm(folder: Path, **kw) -> Path:
    write_text(folder)
    path = folder / "lm.sml"
    path.write_text(record_text(**kw))
    return path


def tiny_lm(device="reference", **kw) -> RecordModel:
    record = parse(record_text(**kw)).data
    return RecordModel(record, device=device, gen=Generator(5, "init")).eval()


def torch_choose(logits, u: float, temperature: float, top_k=None, top_p=None) -> int:
    z = torch.tensor(logits, dtype=torch.float64)
    if temperature == 0:
        return int(torch.argmax(z))  # the first of equal maxima
    z = z / temperature
    n = z.numel()
    keep = torch.ones(n, dtype=torch.bool)
    if top_k is not None and top_k < n:
        order = torch.sort(-z, stable=True).indices  # descending, equal: lower id first
        keep = torch.zeros(n, dtype=torch.bool)
        keep[order[:top_k]] = True
    p = torch.softmax(z.masked_fill(~keep, float("-inf")), 0)
    if top_p is not None and top_p < 1:
        order = torch.sort(-p, stable=True).indices
        sp = p[order]
        before = torch.cat([torch.zeros(1, dtype=torch.float64), torch.cumsum(sp, 0)[:-1]])
        nucleus = torch.zeros(n, dtype=torch.bool)
        nucleus[order[before < top_p]] = True
        keep = keep & nucleus
        p = torch.where(keep, p, torch.zeros_like(p))
        p = p / p.sum()
    cum = torch.cumsum(p, 0)
    i = int(torch.searchsorted(cum, torch.tensor([u], dtype=torch.float64), right=True)[0])
    return i if i < n else int(keep.nonzero()[-1])
