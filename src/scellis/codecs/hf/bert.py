"""BERT-style encoders (codecs layer): post-LN blocks, absolute positions plus token types.

The record's input is the token ids; token types are all 0 (one segment), which is how
a single sequence is encoded. Wire a second input into ``types`` (``in: [pos,
token_type_ids]``) to pass segments. A masked-LM checkpoint (``cls.predictions.*``)
keeps its head (dense, GELU, layer norm, the tied decoder with its bias); a bare
encoder's output is the last hidden state. The pooler is not imported (and an exported
``BertModel`` gets a fresh one from ``transformers``; ``last_hidden_state`` is the model's).
"""

from __future__ import annotations

from ...base.errors import ScellisError
from ...catalog.registry import lookup
from ...model.build import config_of
from ..raw import RawTensor
from .common import ACTIVATION_OUT, Names, activation, ids_input, need

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


def _spec(record: dict, name: str, block_id: str) -> dict:
    spec = (record.get("blocks") or {}).get(name) or {}
    if spec.get("block_id") != block_id:
        raise ScellisError(f"a BERT export needs a {block_id} block named {name!r}")
    return spec


def export(record: dict, tensors: dict[str, RawTensor]) -> tuple[dict, dict[str, RawTensor]]:
    """(config.json, tensors by BERT name): BertModel, or BertForMaskedLM with the head."""
    names = ("tok", "pos", "types", "ln", "body")
    for n, bid in zip(names, ("nn/embedding", "nn/learned_position", "nn/token_type",
                              "nn/layer_norm", "nn/transformer")):  # fmt: skip
        _spec(record, n, bid)
    blocks = record["blocks"]
    c = config_of(lookup("nn/transformer", "block"), blocks["body"], "body")
    mlm = "head" in blocks
    eps = {c.eps, blocks["ln"].get("eps", 1e-5)}
    if mlm:
        eps.add(_spec(record, "mlm_ln", "nn/layer_norm").get("eps", 1e-5))
        act = _spec(record, "mlm_act", "nn/activation").get("function", "relu")
        _spec(record, "mlm_dense", "nn/linear")
        head = _spec(record, "head", "nn/lm_head")
    bad = [why for why, cond in (
        ("pre-norm blocks", c.norm_first), ("RMS norm", c.norm != "layer"),
        ("a gated MLP", c.mlp != "plain"), ("rotary positions", c.rotary),
        ("projections without biases", not c.bias or c.qkv_bias is False),
        ("grouped-query attention", c.num_kv_heads not in (None, c.num_heads)),
        ("a final norm", c.final_norm), ("a causal stack", c.kind != "encoder"),
        ("different layer-norm eps", len(eps) > 1),
        ("a head activation other than the blocks'", mlm and act != c.activation),
        ("an untied head or one without bias",
         mlm and (head.get("tie_to") != "tok" or not head.get("bias"))),
    ) if cond]  # fmt: skip
    if bad:
        raise ScellisError(f"a BERT export cannot hold {', '.join(bad)}")
    pad = blocks["tok"].get("padding_idx")
    cfg = {
        "architectures": ["BertForMaskedLM" if mlm else "BertModel"], "model_type": "bert",
        "vocab_size": tensors["tok.weight"].shape[0], "hidden_size": c.d_model,
        "num_hidden_layers": c.num_layers, "num_attention_heads": c.num_heads,
        "intermediate_size": c.d_ff or 4 * c.d_model,
        "hidden_act": ACTIVATION_OUT[c.activation], "layer_norm_eps": c.eps,
        "max_position_embeddings": tensors["pos.weight"].shape[0],
        "type_vocab_size": tensors["types.weight"].shape[0],
        "pad_token_id": 0 if pad is None else pad, "hidden_dropout_prob": 0.0,
        "attention_probs_dropout_prob": 0.0, "tie_word_embeddings": True,
    }  # fmt: skip
    root = "bert." if mlm else ""
    e = root + "embeddings."
    out = {e + "word_embeddings.weight": tensors["tok.weight"],
           e + "position_embeddings.weight": tensors["pos.weight"],
           e + "token_type_embeddings.weight": tensors["types.weight"],
           e + "LayerNorm.weight": tensors["ln.weight"],
           e + "LayerNorm.bias": tensors["ln.bias"]}  # fmt: skip
    for i in range(c.num_layers):
        h, b = f"{root}encoder.layer.{i}.", f"body.blocks.{i}."
        for ours, theirs in _LAYER.items():
            out[h + theirs + ".weight"] = tensors[b + ours + ".weight"]
            out[h + theirs + ".bias"] = tensors[b + ours + ".bias"]
    if mlm:
        t = _MLM + "transform."
        for ours, theirs in (("mlm_dense", "dense"), ("mlm_ln", "LayerNorm")):
            out[t + theirs + ".weight"] = tensors[ours + ".weight"]
            out[t + theirs + ".bias"] = tensors[ours + ".bias"]
        out[_MLM + "bias"] = tensors["head.bias"]
    return cfg, out
