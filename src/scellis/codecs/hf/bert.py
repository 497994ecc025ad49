"""BERT-style encoders (codecs layer): post-LN blocks, absolute positions plus token types.

The record's input is the token ids; token types are all 0 (one segment), which is how
a single sequence is encoded. Wire a second input into ``types`` (``in: [pos,
token_type_ids]``) to pass segments. A masked-LM checkpoint (``cls.predictions.*``)
keeps its head (dense, GELU, layer norm, the tied decoder with its bias); a bare
encoder's output is the last hidden state. The pooler is not imported.
"""

from __future__ import annotations

from ..raw import RawTensor
from .common import Names, activation, ids_input, need

MODEL_TYPES = ("bert",)
_LAYER = {"attn.q": "attention.self.query", "attn.k": "attention.self.key",
          "attn.v": "attention.self.value", "attn.o": "attention.output.dense",
          "ln1": "attention.output.LayerNorm", "mlp.fc1": "intermediate.dense",
          "mlp.fc2": "output.dense", "ln2": "output.LayerNorm"}  # fmt: skip
_MLM = "cls.predictions."


def _has_mlm(tensors) -> bool:
    return _MLM + "transform.dense.weight" in tensors


def record(cfg: dict, name: str, context: int, tensors=None) -> dict:
    E, V = need(cfg, "hidden_size"), need(cfg, "vocab_size")
    n_pos, eps = need(cfg, "max_position_embeddings"), need(cfg, "layer_norm_eps", default=1e-12)
    act = activation(cfg, "hidden_act")
    tok = {"block_id": "nn/embedding", "in": "ids", "num_embeddings": V, "embedding_dim": E}
    if cfg.get("pad_token_id") is not None:
        tok["padding_idx"] = cfg["pad_token_id"]
    blocks = {
        "tok": tok,
        "pos": {
            "block_id": "nn/learned_position",
            "in": "tok",
            "max_len": n_pos,
            "dim": E,
            "std": 0.02,
        },  # fmt: skip
        "types": {
            "block_id": "nn/token_type",
            "in": "pos",
            "dim": E,
            "num_types": need(cfg, "type_vocab_size", default=2),
            "std": 0.02,
        },  # fmt: skip
        "ln": {"block_id": "nn/layer_norm", "in": "types", "normalized_shape": E, "eps": eps},
        "body": {
            "block_id": "nn/transformer",
            "in": "ln",
            "d_model": E,
            "num_heads": need(cfg, "num_attention_heads"),
            "num_layers": need(cfg, "num_hidden_layers"),
            "d_ff": need(cfg, "intermediate_size"),
            "kind": "encoder",
            "activation": act,
            "eps": eps,
            "bias": True,
            "norm_first": False,
            "final_norm": False,
        },  # fmt: skip
    }
    out = "body"
    if tensors is not None and _has_mlm(tensors):
        blocks["mlm_dense"] = {"block_id": "nn/linear", "in": "body", "in_features": E,
                               "out_features": E}  # fmt: skip
        blocks["mlm_act"] = {"block_id": "nn/activation", "in": "mlm_dense", "function": act}
        blocks["mlm_ln"] = {"block_id": "nn/layer_norm", "in": "mlm_act", "normalized_shape": E,
                            "eps": eps}  # fmt: skip
        blocks["head"] = {"block_id": "nn/lm_head", "in": "mlm_ln", "d_model": E,
                          "vocab_size": V, "bias": True, "tie_to": "tok"}  # fmt: skip
        out = "head"
    return {"model": name, "inputs": ids_input(min(context, n_pos)), "blocks": blocks,
            "outputs": [out]}  # fmt: skip


def weights(cfg: dict, tensors: dict[str, RawTensor]) -> tuple[dict[str, RawTensor], list[str]]:
    n = Names(tensors, "embeddings.word_embeddings.weight", ("bert.", ""))
    e = "embeddings."
    out = {"tok.weight": n.take(e + "word_embeddings.weight"),
           "pos.weight": n.take(e + "position_embeddings.weight"),
           "types.weight": n.take(e + "token_type_embeddings.weight"),
           "ln.weight": n.take(e + "LayerNorm.weight"),
           "ln.bias": n.take(e + "LayerNorm.bias")}  # fmt: skip
    for i in range(need(cfg, "num_hidden_layers")):
        h, b = f"encoder.layer.{i}.", f"body.blocks.{i}."
        for ours, theirs in _LAYER.items():
            out[b + ours + ".weight"] = n.take(h + theirs + ".weight")
            out[b + ours + ".bias"] = n.take(h + theirs + ".bias")
    if _has_mlm(tensors):
        t = _MLM + "transform."
        for ours, theirs in (("mlm_dense", "dense"), ("mlm_ln", "LayerNorm")):
            out[ours + ".weight"] = n.take(t + theirs + ".weight", bare=True)
            out[ours + ".bias"] = n.take(t + theirs + ".bias", bare=True)
        key = _MLM + "bias" if n.has(_MLM + "bias", bare=True) else _MLM + "decoder.bias"
        out["head.bias"] = n.take(key, bare=True)
        for tied in (_MLM + "decoder.weight", _MLM + "decoder.bias"):
            if n.has(tied, bare=True):
                n.take(tied, bare=True)
    leftover = [k for k in n.unused() if "pooler." not in k and not k.endswith("position_ids")]
    return out, leftover
