"""The Llama family (codecs layer): RMSNorm, RoPE, SwiGLU MLP, grouped-query attention.

Covers ``llama`` (SmolLM, TinyLlama), ``mistral`` (its sliding window must be at least
the record's context, where it masks nothing) and ``qwen2`` (biases on q, k, v only).
RoPE is the plain one, linear scaling or Llama 3.1's ``llama3`` scaling; other
``rope_type``s (dynamic, yarn, longrope) are refused, never approximated.
"""

from __future__ import annotations

from ...base.errors import ScellisError
from ...catalog.registry import lookup
from ...model.build import config_of
from ..raw import RawTensor
from .common import ACTIVATION_OUT, Names, activation, blocks_of, ids_input, need, seq_len

MODEL_TYPES = ("llama", "mistral", "qwen2")
_PROJ = {"attn.q": "self_attn.q_proj", "attn.k": "self_attn.k_proj", "attn.v": "self_attn.v_proj",
         "attn.o": "self_attn.o_proj", "mlp.gate": "mlp.gate_proj", "mlp.up": "mlp.up_proj",
         "mlp.down": "mlp.down_proj"}  # fmt: skip
_NORMS = {"ln1": "input_layernorm", "ln2": "post_attention_layernorm"}


def rope(cfg: dict) -> dict:
    """The transformer's RoPE fields from either config style (v4 ``rope_theta`` +
    ``rope_scaling``, v5 ``rope_parameters``)."""
    params = cfg.get("rope_parameters") or {}
    scaling = cfg.get("rope_scaling") or params
    kind = scaling.get("rope_type") or scaling.get("type") or "default"
    if kind not in ("default", "linear", "llama3"):
        raise ScellisError(
            f"config.json: rope_type {kind!r} is not supported (supported: default, linear, llama3)"
        )
    theta = cfg.get("rope_theta") or params.get("rope_theta") or 10000.0
    out = {"rotary": True, "rotary_base": float(theta)}
    if kind != "default":
        out["rotary_scaling"] = float(scaling.get("factor", 1.0))
    if kind == "llama3":
        out["rotary_scaling_type"] = "llama3"
        where = "config.json rope_scaling"
        out["rotary_low_freq_factor"] = float(need(scaling, "low_freq_factor", where=where))
        out["rotary_high_freq_factor"] = float(need(scaling, "high_freq_factor", where=where))
        out["rotary_original_context"] = int(
            need(scaling, "original_max_position_embeddings", where=where)
        )
    return out


def _biases(cfg: dict) -> tuple[bool, bool | None]:
    """(bias on o and the MLP, bias on q/k/v or None for the same)."""
    if cfg.get("model_type") == "qwen2":
        return False, True
    return bool(cfg.get("attention_bias", False)), None


def record(cfg: dict, name: str, context: int) -> dict:
    mt = cfg.get("model_type")
    E, H = need(cfg, "hidden_size"), need(cfg, "num_attention_heads")
    if cfg.get("head_dim") not in (None, E // H) or E % H:
        raise ScellisError(f"config.json: head_dim {cfg.get('head_dim')} != hidden_size / heads")
    if mt == "llama" and bool(cfg.get("attention_bias")) != bool(cfg.get("mlp_bias")):
        raise ScellisError("config.json: attention_bias without mlp_bias is not supported")
    window = cfg.get("sliding_window")
    n_pos = need(cfg, "max_position_embeddings", default=2048)
    context = min(context, n_pos)
    # a window at least the context long never masks anything: full attention is exact
    if (mt != "qwen2" or cfg.get("use_sliding_window")) and window and window < context:
        raise ScellisError(
            f"config.json: a sliding window ({window}) shorter than the context ({context}) "
            "is not supported"
        )
    bias, qkv_bias = _biases(cfg)
    V = need(cfg, "vocab_size")
    body = {"block_id": "nn/transformer", "in": "tok", "d_model": E, "num_heads": H,
            "num_layers": need(cfg, "num_hidden_layers"), "d_ff": need(cfg, "intermediate_size"),
            "kind": "decoder", "activation": activation(cfg, "hidden_act"),
            "eps": need(cfg, "rms_norm_eps", default=1e-6), "bias": bias, "norm": "rms",
            "mlp": "gated", **rope(cfg)}  # fmt: skip
    kv = need(cfg, "num_key_value_heads", default=H)
    if kv != H:
        body["num_kv_heads"] = kv
    if qkv_bias is not None:
        body["qkv_bias"] = qkv_bias
    head = {"block_id": "nn/lm_head", "in": "body", "d_model": E, "vocab_size": V}
    if cfg.get("tie_word_embeddings", False):
        head["tie_to"] = "tok"
    return {
        "model": name,
        "inputs": ids_input(context),
        "blocks": {
            "tok": {
                "block_id": "nn/embedding",
                "in": "ids",
                "num_embeddings": V,
                "embedding_dim": E,
            },  # fmt: skip
            "body": body,
            "head": head,
        },
        "outputs": ["head"],
    }


def weights(cfg: dict, tensors: dict[str, RawTensor]) -> tuple[dict[str, RawTensor], list[str]]:
    n = Names(tensors, "embed_tokens.weight", ("model.", ""))
    bias, qkv_bias = _biases(cfg)
    qkv_bias = bias if qkv_bias is None else qkv_bias
    out = {"tok.weight": n.take("embed_tokens.weight")}
    for i in range(need(cfg, "num_hidden_layers")):
        h, b = f"layers.{i}.", f"body.blocks.{i}."
        for ours, theirs in _NORMS.items():
            out[b + ours + ".weight"] = n.take(h + theirs + ".weight")
        for ours, theirs in _PROJ.items():
            out[b + ours + ".weight"] = n.take(h + theirs + ".weight")
            if qkv_bias if ours in ("attn.q", "attn.k", "attn.v") else bias:
                out[b + ours + ".bias"] = n.take(h + theirs + ".bias")
    out["body.ln_f.weight"] = n.take("norm.weight")
    if not cfg.get("tie_word_embeddings", False):
        out["head.weight"] = n.take("lm_head.weight", bare=True)
    elif n.has("lm_head.weight", bare=True):
        n.take("lm_head.weight", bare=True)
    leftover = [k for k in n.unused() if not k.endswith("rotary_emb.inv_freq")]
    return out, leftover


def matches(record: dict) -> bool:
    bl = blocks_of(record)
    return "nn/learned_position" not in bl and bool(
        bl.get("nn/transformer", ("", {}))[1].get("rotary")
    )


def export(record: dict, tensors: dict[str, RawTensor]) -> tuple[dict, dict[str, RawTensor]]:
    bl = blocks_of(record)
    (tok, _), (body, bspec) = bl["nn/embedding"], bl["nn/transformer"]
    head, hspec = bl["nn/lm_head"]
    c = config_of(lookup("nn/transformer", "block"), bspec, "body")
    bad = [why for why, cond in (
        ("layer norm", c.norm != "rms"), ("post-norm blocks", not c.norm_first),
        ("a plain MLP", c.mlp != "gated"), ("no final norm", not c.final_norm),
        ("an encoder (non-causal) stack", c.kind != "decoder"),
        ("a head bias", bool(hspec.get("bias"))),
        ("biases on o or the MLP without q/k/v biases", c.bias and c.qkv_bias is False),
    ) if cond]  # fmt: skip
    if bad:
        raise ScellisError(f"a Llama-family export cannot hold {', '.join(bad)}")
    qkv_bias = c.bias if c.qkv_bias is None else c.qkv_bias
    qwen = qkv_bias and not c.bias
    E, H = c.d_model, c.num_heads
    tied = bool(hspec.get("tie_to"))
    cfg = {
        "architectures": ["Qwen2ForCausalLM" if qwen else "LlamaForCausalLM"],
        "model_type": "qwen2" if qwen else "llama",
        "vocab_size": tensors[f"{tok}.weight"].shape[0], "hidden_size": E,
        "intermediate_size": c.d_ff or 4 * E, "num_hidden_layers": c.num_layers,
        "num_attention_heads": H, "num_key_value_heads": c.num_kv_heads or H,
        "head_dim": E // H, "hidden_act": ACTIVATION_OUT[c.activation],
        "rms_norm_eps": c.eps, "max_position_embeddings": max(seq_len(record, 2048), 2048),
        "rope_theta": c.rotary_base, "tie_word_embeddings": tied, "attention_dropout": 0.0,
        "bos_token_id": None, "eos_token_id": None, "pad_token_id": None,
    }  # fmt: skip
    rp = {"rope_type": "default", "rope_theta": c.rotary_base}
    if c.rotary_scaling_type == "llama3":
        rp = {"rope_type": "llama3", "rope_theta": c.rotary_base, "factor": c.rotary_scaling,
              "low_freq_factor": c.rotary_low_freq_factor,
              "high_freq_factor": c.rotary_high_freq_factor,
              "original_max_position_embeddings": c.rotary_original_context}  # fmt: skip
    elif c.rotary_scaling != 1.0:
        rp = {"rope_type": "linear", "rope_theta": c.rotary_base, "factor": c.rotary_scaling}
    if rp["rope_type"] != "default":
        cfg["rope_scaling"] = {k: v for k, v in rp.items() if k != "rope_theta"}
    cfg["rope_parameters"] = rp
    if not qwen:
        cfg["attention_bias"], cfg["mlp_bias"] = bool(c.bias), bool(c.bias)
    else:
        cfg["use_sliding_window"] = False
    out = {"model.embed_tokens.weight": tensors[f"{tok}.weight"]}
    for i in range(c.num_layers):
        h, b = f"model.layers.{i}.", f"{body}.blocks.{i}."
        for ours, theirs in _NORMS.items():
            out[h + theirs + ".weight"] = tensors[b + ours + ".weight"]
        for ours, theirs in _PROJ.items():
            out[h + theirs + ".weight"] = tensors[b + ours + ".weight"]
            if b + ours + ".bias" in tensors:
                out[h + theirs + ".bias"] = tensors[b + ours + ".bias"]
    out["model.norm.weight"] = tensors[f"{body}.ln_f.weight"]
    if not tied:
        out["lm_head.weight"] = tensors[f"{head}.weight"]
    return cfg, out
