"""BERT-style encoders (codecs layer): BERT, RoBERTa and DistilBERT; post-LN blocks,
absolute positions (plus token types where the model has them).

The record's input is the token ids; token types are all 0 (one segment), which is how
a single sequence is encoded. Wire a second input into ``types`` (``in: [pos,
token_type_ids]``) to pass segments. RoBERTa numbers positions from ``pad_token_id + 1``
(for ids that are not padding), so its table is imported from that row on and the
record's positions count from 0 as BERT's do. A masked-LM checkpoint keeps its head
(dense, GELU, layer norm, the tied decoder with its bias); a bare encoder's output is
the last hidden state. The pooler is not imported (and an exported ``BertModel`` gets a
fresh one from ``transformers``; ``last_hidden_state`` is the model's). A config with
``is_decoder`` (``BertLMHeadModel``) is the same stack made causal; relative position
embeddings and cross-attention are refused.
"""

from __future__ import annotations

from ...base.errors import ScellisError, shown
from ...catalog.registry import lookup
from ...model.build import config_of
from ..raw import RawTensor
from .common import ACTIVATION_OUT, Names, activation, ids_input, need
from .tensors import split_rows

MODEL_TYPES = ("bert", "roberta", "distilbert")
_LAYER = {"attn.q": "attention.self.query", "attn.k": "attention.self.key",
          "attn.v": "attention.self.value", "attn.o": "attention.output.dense",
          "ln1": "attention.output.LayerNorm", "mlp.fc1": "intermediate.dense",
          "mlp.fc2": "output.dense", "ln2": "output.LayerNorm"}  # fmt: skip
_DISTIL = {"attn.q": "attention.q_lin", "attn.k": "attention.k_lin", "attn.v": "attention.v_lin",
           "attn.o": "attention.out_lin", "ln1": "sa_layer_norm", "mlp.fc1": "ffn.lin1",
           "mlp.fc2": "ffn.lin2", "ln2": "output_layer_norm"}  # fmt: skip
_MLM = "cls.predictions."
# per model type: wrapper prefixes, where the layers are and their names, the MLM head's
# (dense, layer norm, bias names, tied decoder names)
LAYOUTS = {
    "bert": {"prefixes": ("bert.", ""), "layer": "encoder.layer.{}.", "names": _LAYER,
             "mlm": ("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
                     ("cls.predictions.bias", "cls.predictions.decoder.bias"),
                     ("cls.predictions.decoder.weight",))},
    "roberta": {"prefixes": ("roberta.", ""), "layer": "encoder.layer.{}.", "names": _LAYER,
                "mlm": ("lm_head.dense", "lm_head.layer_norm",
                        ("lm_head.bias", "lm_head.decoder.bias"), ("lm_head.decoder.weight",))},
    "distilbert": {"prefixes": ("distilbert.", ""), "layer": "transformer.layer.{}.",
                   "names": _DISTIL,
                   "mlm": ("vocab_transform", "vocab_layer_norm", ("vocab_projector.bias",),
                           ("vocab_projector.weight",))},
}  # fmt: skip


def _has_mlm(cfg: dict, tensors) -> bool:
    return LAYOUTS[cfg["model_type"]]["mlm"][0] + ".weight" in (tensors or {})


def _offset(cfg: dict) -> int:
    """The first position row a model uses (RoBERTa: pad_token_id + 1)."""
    return (
        need(cfg, "pad_token_id", default=1, kind="index") + 1
        if cfg["model_type"] == "roberta"
        else 0
    )


def _sizes(cfg: dict) -> dict:
    if cfg["model_type"] == "distilbert":
        if cfg.get("sinusoidal_pos_embds"):
            raise ScellisError("config.json: DistilBERT with sinusoidal_pos_embds is not supported")
        return {"E": need(cfg, "dim"), "H": need(cfg, "n_heads"), "L": need(cfg, "n_layers"),
                "ff": need(cfg, "hidden_dim"), "eps": 1e-12,
                "act": activation(cfg, "activation"), "types": 0}  # fmt: skip
    return {"E": need(cfg, "hidden_size"), "H": need(cfg, "num_attention_heads"),
            "L": need(cfg, "num_hidden_layers"), "ff": need(cfg, "intermediate_size"),
            "eps": need(cfg, "layer_norm_eps", default=1e-12, kind="number"),
            "act": activation(cfg, "hidden_act"),
            "types": need(cfg, "type_vocab_size", default=2, kind="index")}  # fmt: skip


def _refuse_variants(cfg: dict) -> None:
    """Config switches that change the encoder's maths in ways the record cannot hold."""
    pos = cfg.get("position_embedding_type") or "absolute"
    if pos != "absolute":
        raise ScellisError(
            f"config.json: position_embedding_type {shown(pos, 40)!r} is not supported "
            "(only 'absolute')"
        )
    if cfg.get("add_cross_attention"):
        raise ScellisError("config.json: add_cross_attention (an encoder-decoder) is not supported")


def record(cfg: dict, name: str, context: int, tensors=None) -> dict:
    _refuse_variants(cfg)
    z = _sizes(cfg)
    E, V, eps, act = z["E"], need(cfg, "vocab_size"), z["eps"], z["act"]
    n_pos = need(cfg, "max_position_embeddings") - _offset(cfg)
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
    }
    if z["types"]:
        blocks["types"] = {"block_id": "nn/token_type", "in": "pos", "dim": E,
                           "num_types": z["types"], "std": 0.02}  # fmt: skip
    blocks["ln"] = {"block_id": "nn/layer_norm", "in": "types" if z["types"] else "pos",
                    "normalized_shape": E, "eps": eps}  # fmt: skip
    blocks["body"] = {"block_id": "nn/transformer", "in": "ln", "d_model": E, "num_heads": z["H"],
                      "num_layers": z["L"], "d_ff": z["ff"],
                      "kind": "decoder" if cfg.get("is_decoder") else "encoder",
                      "activation": act, "eps": eps, "bias": True, "norm_first": False,
                      "final_norm": False}  # fmt: skip
    out = "body"
    if _has_mlm(cfg, tensors):
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
    lay = LAYOUTS[cfg["model_type"]]
    n = Names(tensors, "embeddings.word_embeddings.weight", lay["prefixes"])
    e = "embeddings."
    pos = n.take(e + "position_embeddings.weight")
    skip = _offset(cfg)
    if skip:
        pos = split_rows(pos, [skip, pos.shape[0] - skip])[1]
    out = {"tok.weight": n.take(e + "word_embeddings.weight"), "pos.weight": pos,
           "ln.weight": n.take(e + "LayerNorm.weight"),
           "ln.bias": n.take(e + "LayerNorm.bias")}  # fmt: skip
    if n.has(e + "token_type_embeddings.weight"):
        out["types.weight"] = n.take(e + "token_type_embeddings.weight")
    for i in range(_sizes(cfg)["L"]):
        h, b = lay["layer"].format(i), f"body.blocks.{i}."
        for ours, theirs in lay["names"].items():
            out[b + ours + ".weight"] = n.take(h + theirs + ".weight")
            out[b + ours + ".bias"] = n.take(h + theirs + ".bias")
    if _has_mlm(cfg, tensors):
        dense, norm, biases, tied = lay["mlm"]
        for ours, theirs in (("mlm_dense", dense), ("mlm_ln", norm)):
            out[ours + ".weight"] = n.take(theirs + ".weight", bare=True)
            out[ours + ".bias"] = n.take(theirs + ".bias", bare=True)
        key = next((k for k in biases if n.has(k, bare=True)), biases[0])
        out["head.bias"] = n.take(key, bare=True)
        for k in (*biases, *tied):
            if n.has(k, bare=True):
                n.take(k, bare=True)  # the decoder's copies of tied values
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
