"""Small torch models the ONNX tests export with torch.onnx.export (the TorchScript path)."""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F


class MLP(torch.nn.Module):
    """Gemm / MatMul+Add, ReLU, LayerNorm, exact GELU, tanh, sigmoid."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(3, 8)
        self.ln = torch.nn.LayerNorm(8, eps=1e-6)
        self.b = torch.nn.Linear(8, 6, bias=False)
        self.c = torch.nn.Linear(6, 2)

    def forward(self, x):
        h = F.gelu(self.ln(torch.relu(self.a(x))))
        return torch.sigmoid(self.c(torch.tanh(self.b(h))))


class Forecaster(torch.nn.Module):
    """A stacked batch-first recurrent net, the last step into a linear head."""

    def __init__(self, cls, layers=2, hidden=5, features=2):
        super().__init__()
        self.rnn = cls(features, hidden, num_layers=layers, batch_first=True)
        self.head = torch.nn.Linear(hidden, 1)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.head(y[:, -1])


class Sequence(torch.nn.Module):
    """Every step of a GRU, then a per-step linear map (MatMul + Add on [B, T, H])."""

    def __init__(self):
        super().__init__()
        self.gru = torch.nn.GRU(3, 4, batch_first=True)
        self.proj = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.proj(self.gru(x)[0])


class CharModel(torch.nn.Module):
    """Token ids -> embedding -> GRU -> next-token logits at every step."""

    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(20, 6)
        self.rnn = torch.nn.GRU(6, 5, batch_first=True)
        self.out = torch.nn.Linear(5, 20)

    def forward(self, x):
        return self.out(self.rnn(self.tok(x))[0])


class Unsupported(torch.nn.Module):
    """A running sum and a max pooling: ONNX CumSum and MaxPool, which Scellis has no form for."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.nn.functional.max_pool1d(self.lin(x).cumsum(1), 2)


def export(model, x, path, dynamic: bool = True, **kw) -> None:
    model.eval()
    axes = {"x": {0: "batch"}} if dynamic else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, (x,), str(path), dynamo=False, input_names=["x"], output_names=["y"],
            dynamic_axes=axes, opset_version=17, **kw,
        )  # fmt: skip
