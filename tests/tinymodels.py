"""Tiny models a user might bring to the tab, saved as torch and transformers save them:
an ONNX MLP and LSTM forecaster (torch.onnx.export), Hugging Face GPT-2 and Llama
folders (save_pretrained, random weights, optionally sharded)."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


class Forecaster(torch.nn.Module):
    """An LSTM over [batch, time, features], its last step into a linear head."""

    def __init__(self, features=3, hidden=6, outputs=2):
        super().__init__()
        self.rnn = torch.nn.LSTM(features, hidden, batch_first=True)
        self.head = torch.nn.Linear(hidden, outputs)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.head(y[:, -1])


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.GELU(), torch.nn.Linear(16, 3))


def onnx_file(model, example, path):
    """``model`` exported as a user would, the batch left open."""
    model.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (example,), str(path), dynamo=False, input_names=["x"],
                          output_names=["y"], dynamic_axes={"x": {0: "batch"}})  # fmt: skip
    return path


def _redrawn(model, seed):
    # weights far from their init so a misplaced tensor shows in the outputs
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(0.3 * torch.randn(p.shape, generator=g))
    return model.eval()


def gpt2_folder(folder, seed=1, shard: str | None = None):
    cfg = transformers.GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=40, n_positions=12,
                                  bos_token_id=0, eos_token_id=0)  # fmt: skip
    model = _redrawn(transformers.GPT2LMHeadModel(cfg), seed)
    model.save_pretrained(folder, **({"max_shard_size": shard} if shard else {}))
    return model


def llama_folder(folder, seed=2):
    cfg = transformers.LlamaConfig(
        hidden_size=16, intermediate_size=24, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1, vocab_size=40, max_position_embeddings=12, bos_token_id=0,
        eos_token_id=0,
    )  # fmt: skip
    model = _redrawn(transformers.LlamaForCausalLM(cfg), seed)
    model.save_pretrained(folder)
    return model
