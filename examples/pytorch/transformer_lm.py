"""A tiny Transformer language model written for torch's API: token embedding, learned
positions, causal TransformerEncoderLayers, a linear head, AdamW and cross-entropy on the
next character.

Run it with Scellis (``python examples/pytorch/transformer_lm.py``) or with PyTorch
(``... --torch``): only the import differs (see swap.py).
"""

from __future__ import annotations

from swap import library, report

TEXT = "the quick brown fox jumps over the lazy dog; " * 4
VOCAB = sorted(set(TEXT))
CONTEXT, D_MODEL, HEADS, LAYERS = 12, 32, 4, 2


def build(lib):
    nn = lib.nn

    class TinyLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(len(VOCAB), D_MODEL)
            self.pos = nn.Embedding(CONTEXT, D_MODEL)
            self.blocks = nn.ModuleList([
                nn.TransformerEncoderLayer(D_MODEL, HEADS, dim_feedforward=64, dropout=0.0,
                                           batch_first=True)
                for _ in range(LAYERS)
            ])  # fmt: skip
            self.head = nn.Linear(D_MODEL, len(VOCAB))

        def forward(self, ids):  # [B, T] token ids
            t = ids.shape[1]
            x = self.tok(ids) + self.pos(lib.arange(t, device=ids.device))
            mask = nn.Transformer.generate_square_subsequent_mask(t, device=ids.device)
            for block in self.blocks:
                x = block(x, src_mask=mask, is_causal=True)
            return self.head(x)  # [B, T, vocab] next-character logits

    return TinyLM()


def windows(stride=6):
    ids = [VOCAB.index(c) for c in TEXT]
    starts = range(0, len(ids) - CONTEXT - 1, stride)
    return [ids[i : i + CONTEXT] for i in starts], [ids[i + 1 : i + CONTEXT + 1] for i in starts]


def train(lib, data, state, epochs=3, device="cpu"):
    """The loss of every step, from the weights ``state``."""
    model = build(lib).to(device)
    opt = lib.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    model.load_state_dict(state)
    xs, ys = windows()
    dataset = data.TensorDataset(lib.tensor(xs, device=device), lib.tensor(ys, device=device))
    losses = []
    for _ in range(epochs):
        for xb, yb in data.DataLoader(dataset, batch_size=8):
            opt.zero_grad()
            logits = model(xb)
            loss = lib.nn.functional.cross_entropy(logits.reshape(-1, len(VOCAB)), yb.reshape(-1))
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return losses


if __name__ == "__main__":
    lib, data, device, epochs = library()
    lib.manual_seed(0)
    report(train(lib, data, build(lib).state_dict(), epochs, device))
