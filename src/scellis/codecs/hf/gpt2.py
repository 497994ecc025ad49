"""The GPT-2 family (codecs layer): learned positions, pre-LN blocks, GELU MLP, tied head.

GPT-2 keeps its projections as ``Conv1D`` weights [in, out], the transpose of a
Linear's, and packs q, k, v into ``c_attn``; both are undone on import and redone on
export. The head is the token embedding unless ``tie_word_embeddings`` is false.
"""

from __future__ import annotations

from ...base.errors import ScellisError
from ...catalog.registry import lookup
from ...model.build import config_of
from ..raw import RawTensor
from .common import ACTIVATION_OUT, Names, activation, blocks_of, ids_input, need, seq_len
from .tensors import cat_rows, split_rows, transpose

MODEL_TYPES = ("gpt2",)


def record(cfg: dict, name: str, context: int) -> dict:
    # reorder_and_upcast_attn is not here: it changes only where half-precision scores
    # round, and Scellis keeps scores in f32 whatever the weights' dtype
    plain = {"scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False,
             "add_cross_attention": False}  # fmt: skip
    for key, ok in plain.items():
        if cfg.get(key, ok) != ok:
            raise ScellisError(f"config.json: GPT-2 with {key}={cfg[key]} is not supported")
    E, n_pos = need(cfg, "n_embd"), need(cfg, "n_positions")
    V = need(cfg, "vocab_size")
    head = {"block_id": "nn/lm_head", "in": "body", "d_model": E, "vocab_size": V}
    if cfg.get("tie_word_embeddings", True):
        head["tie_to"] = "tok"
    body = {"block_id": "nn/transformer", "in": "pos", "d_model": E,
            "num_heads": need(cfg, "n_head"), "num_layers": need(cfg, "n_layer"),
            "d_ff": need(cfg, "n_inner", default=4 * E), "kind": "decoder",
            "activation": activation(cfg, "activation_function"),
            "eps": need(cfg, "layer_norm_epsilon", default=1e-5, kind="number"),
            "bias": True}  # fmt: skip
    return {
        "model": name,
        "inputs": ids_input(min(context, n_pos)),
        "blocks": {
            "tok": {
                "block_id": "nn/embedding",
                "in": "ids",
                "num_embeddings": V,
                "embedding_dim": E,
            },  # fmt: skip
            "pos": {
                "block_id": "nn/learned_position",
                "in": "tok",
                "max_len": n_pos,
                "dim": E,
                "std": 0.02,
            },  # fmt: skip
            "body": body,
            "head": head,
        },
        "outputs": ["head"],
    }


def weights(cfg: dict, tensors: dict[str, RawTensor]) -> tuple[dict[str, RawTensor], list[str]]:
    """({parameter path: tensor}, checkpoint names left unused)."""
    n = Names(tensors, "wte.weight", ("transformer.", ""))
    E = need(cfg, "n_embd")
    out = {"tok.weight": n.take("wte.weight"), "pos.weight": n.take("wpe.weight")}
    for i in range(need(cfg, "n_layer")):
        h, b = f"h.{i}.", f"body.blocks.{i}."
        for ours, theirs in (("ln1", "ln_1"), ("ln2", "ln_2")):
            out[b + ours + ".weight"] = n.take(h + theirs + ".weight")
            out[b + ours + ".bias"] = n.take(h + theirs + ".bias")
        w, b_ = h + "attn.c_attn.weight", h + "attn.c_attn.bias"
        qkv_w = split_rows(transpose(n.take(w)), [E, E, E], f"{w!r} (transposed)")
        qkv_b = split_rows(n.take(b_), [E, E, E], repr(b_))
        for j, p in enumerate("qkv"):
            out[f"{b}attn.{p}.weight"], out[f"{b}attn.{p}.bias"] = qkv_w[j], qkv_b[j]
        for ours, theirs in (("attn.o", "attn.c_proj"), ("mlp.fc1", "mlp.c_fc"),
                             ("mlp.fc2", "mlp.c_proj")):  # fmt: skip
            out[b + ours + ".weight"] = transpose(n.take(h + theirs + ".weight"))
            out[b + ours + ".bias"] = n.take(h + theirs + ".bias")
    out["body.ln_f.weight"], out["body.ln_f.bias"] = n.take("ln_f.weight"), n.take("ln_f.bias")
    if not cfg.get("tie_word_embeddings", True):
        out["head.weight"] = n.take("lm_head.weight", bare=True)
    elif n.has("lm_head.weight", bare=True):
        n.take("lm_head.weight", bare=True)  # a tied copy some writers keep
    # causal-mask buffers older checkpoints saved beside the weights
    leftover = [k for k in n.unused() if not k.endswith((".attn.bias", ".attn.masked_bias"))]
    return out, leftover


def export(record: dict, tensors: dict[str, RawTensor]) -> tuple[dict, dict[str, RawTensor]]:
    """(config.json, tensors by GPT-2 name) of a record of this family's layout."""
    bl = blocks_of(record)
    (tok, _), (pos, pspec) = bl["nn/embedding"], bl["nn/learned_position"]
    body, bspec = bl["nn/transformer"]
    head, hspec = bl["nn/lm_head"]
    c = config_of(lookup("nn/transformer", "block"), bspec, "body")
    bad = [why for why, cond in (
        ("rotary positions", c.rotary), ("RMS norm", c.norm != "layer"),
        ("post-norm blocks", not c.norm_first), ("a gated MLP", c.mlp != "plain"),
        ("projections without biases", not c.bias or c.qkv_bias is False),
        ("grouped-query attention", c.num_kv_heads not in (None, c.num_heads)),
        ("no final norm", not c.final_norm), ("an encoder (non-causal) stack", c.kind != "decoder"),
        ("a head bias", bool(hspec.get("bias"))),
    ) if cond]  # fmt: skip
    if bad:
        raise ScellisError(f"a GPT-2 export cannot hold {', '.join(bad)}")
    E, tied = c.d_model, bool(hspec.get("tie_to"))
    cfg = {
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
        "vocab_size": tensors[f"{tok}.weight"].shape[0], "n_embd": E, "n_head": c.num_heads,
        "n_layer": c.num_layers, "n_positions": pspec["max_len"], "n_inner": c.d_ff or 4 * E,
        "activation_function": ACTIVATION_OUT[c.activation], "layer_norm_epsilon": c.eps,
        "tie_word_embeddings": tied, "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0,
        "n_ctx": seq_len(record, pspec["max_len"]), "bos_token_id": None, "eos_token_id": None,
    }  # fmt: skip
    out = {"transformer.wte.weight": tensors[f"{tok}.weight"],
           "transformer.wpe.weight": tensors[f"{pos}.weight"]}  # fmt: skip
    for i in range(c.num_layers):
        h, b = f"transformer.h.{i}.", f"{body}.blocks.{i}."
        for ours, theirs in (("ln1", "ln_1"), ("ln2", "ln_2")):
            out[h + theirs + ".weight"] = tensors[b + ours + ".weight"]
            out[h + theirs + ".bias"] = tensors[b + ours + ".bias"]
        qkv = [tensors[f"{b}attn.{p}.weight"] for p in "qkv"]
        out[h + "attn.c_attn.weight"] = transpose(cat_rows(qkv))
        out[h + "attn.c_attn.bias"] = cat_rows([tensors[f"{b}attn.{p}.bias"] for p in "qkv"])
        for ours, theirs in (("attn.o", "attn.c_proj"), ("mlp.fc1", "mlp.c_fc"),
                             ("mlp.fc2", "mlp.c_proj")):  # fmt: skip
            out[h + theirs + ".weight"] = transpose(tensors[b + ours + ".weight"])
            out[h + theirs + ".bias"] = tensors[b + ours + ".bias"]
    out["transformer.ln_f.weight"] = tensors[f"{body}.ln_f.weight"]
    out["transformer.ln_f.bias"] = tensors[f"{body}.ln_f.bias"]
    if not tied:
        out["lm_head.weight"] = tensors[f"{head}.weight"]
    return cfg, out
