"""The Llama family (codecs layer): RMSNorm, RoPE, SwiGLU MLP, grouped-query attention.

Covers ``llama`` (SmolLM, TinyLlama), ``mistral`` and ``qwen2`` (biases on q, k, v
only), with ``head_dim`` apart from the width. RoPE is the plain one, linear scaling,
Llama 3.1's ``llama3`` scaling or ``dynamic`` (NTK), which changes the base only for
sequences past max_position_embeddings (the record's context is never longer); other
``rope_type``s (yarn, longrope) are refused, never approximated. Mistral's sliding
window becomes the transformer's ``window`` when it is shorter than the context; a
window on every layer or on none is supported.
"""

from __future__ import annotations

from ...base.errors import ScellisError, shown
from ...catalog.registry import lookup
from ...model.build import config_of
from ..raw import RawTensor
from .common import ACTIVATION_OUT, Names, activation, blocks_of, ids_input, need, seq_len

MODEL_TYPES = ("llama", "mistral", "qwen2")
_PROJ = {"attn.q": "self_attn.q_proj", "attn.k": "self_attn.k_proj", "attn.v": "self_attn.v_proj",
         "attn.o": "self_attn.o_proj", "mlp.gate": "mlp.gate_proj", "mlp.up": "mlp.up_proj",
         "mlp.down": "mlp.down_proj"}  # fmt: skip
_NORMS = {"ln1": "input_layernorm", "ln2": "post_attention_layernorm"}


def _rope_kind(cfg: dict) -> tuple[str, dict, dict]:
    """(rope_type, its parameters, the v5 ``rope_parameters``) from either config style."""
    params = cfg.get("rope_parameters") or {}
    scaling = cfg.get("rope_scaling") or params
    return scaling.get("rope_type") or scaling.get("type") or "default", scaling, params


def rope(cfg: dict) -> dict:
    """The transformer's RoPE fields from either config style (v4 ``rope_theta`` +
    ``rope_scaling``, v5 ``rope_parameters``)."""
    kind, scaling, params = _rope_kind(cfg)
    if kind not in ("default", "linear", "llama3", "dynamic"):
        raise ScellisError(
            f"config.json: rope_type {shown(kind, 40)!r} is not supported "
            "(supported: default, linear, llama3, dynamic)"
        )
    where = "config.json rope_scaling"
    theta = need(cfg if cfg.get("rope_theta") is not None else params, "rope_theta",
                 default=10000.0, kind="number")  # fmt: skip
    out = {"rotary": True, "rotary_base": float(theta)}
    if kind in ("linear", "llama3"):
        out["rotary_scaling"] = float(need(scaling, "factor", kind="number", where=where))
    if kind == "llama3":
        out["rotary_scaling_type"] = "llama3"
        low = need(scaling, "low_freq_factor", kind="number", where=where)
        high = need(scaling, "high_freq_factor", kind="number", where=where)
        out["rotary_low_freq_factor"], out["rotary_high_freq_factor"] = float(low), float(high)
        out["rotary_original_context"] = need(
            scaling, "original_max_position_embeddings", where=where
        )
    return out


def window(cfg: dict, context: int) -> int | None:
    """The record's sliding window: None where no layer's window masks anything within
    the context. Every layer must share it; some layers windowed and some not (v5
    ``layer_types``, Qwen2's ``max_window_layers``) is refused."""
    if not cfg.get("sliding_window"):
        return None
    size = need(cfg, "sliding_window")
    types = cfg.get("layer_types")
    if isinstance(types, list):
        windowed = {t == "sliding_attention" for t in types}
    elif cfg.get("model_type") == "qwen2":  # before layer_types: layers from max_window_layers on
        first = need(cfg, "max_window_layers", default=0, kind="index")
        layers = need(cfg, "num_hidden_layers")
        # layers first.. are windowed: every one, none, or some (no loop over the layers)
        some = {True} if first == 0 else {False} if first >= layers else {True, False}
        windowed = some if cfg.get("use_sliding_window") else {False}
    else:
        windowed = {True}
    if size >= context or windowed == {False}:
        return None  # a window at least the context long never masks anything
    if windowed != {True}:
        raise ScellisError(
            f"config.json: a sliding_window ({size}) on some layers only (layer_types / "
            f"max_window_layers) is not supported for a context over {size}"
        )
    return size


def _biases(cfg: dict) -> tuple[bool, bool | None]:
    """(bias on o and the MLP, bias on q/k/v or None for the same). Llama's
    attention_bias (q, k, v, o) and mlp_bias must agree: the record's ``bias`` covers o
    and the MLP together. Mistral has no biases and Qwen2 biases on q, k, v only,
    whatever the config says."""
    mt = cfg.get("model_type")
    if mt == "qwen2":
        return False, True
    if mt != "llama":
        return False, None
    attn, mlp = bool(cfg.get("attention_bias")), bool(cfg.get("mlp_bias"))
    if attn != mlp:
        raise ScellisError(
            f"config.json: attention_bias={attn} with mlp_bias={mlp} is not supported "
            "(both true or both false)"
        )
    return attn, None


def _head_dim(cfg: dict, E: int, H: int) -> int | None:
    """The config's head size when it is not hidden_size / heads (None: it is)."""
    D = need(cfg, "head_dim", default=E // H if E % H == 0 else 0, kind="index")
    if D == 0:
        raise ScellisError(
            f"config.json: hidden_size {E} is not a multiple of num_attention_heads {H} "
            "and there is no head_dim"
        )
    return None if D * H == E else D


def record(cfg: dict, name: str, context: int) -> dict:
    E, H = need(cfg, "hidden_size"), need(cfg, "num_attention_heads")
    head_dim = _head_dim(cfg, E, H)
    n_pos = need(cfg, "max_position_embeddings", default=2048)
    context = min(context, n_pos)
    bias, qkv_bias = _biases(cfg)
    V = need(cfg, "vocab_size")
    body = {"block_id": "nn/transformer", "in": "tok", "d_model": E, "num_heads": H,
            "num_layers": need(cfg, "num_hidden_layers"), "d_ff": need(cfg, "intermediate_size"),
            "kind": "decoder", "activation": activation(cfg, "hidden_act"),
            "eps": need(cfg, "rms_norm_eps", default=1e-6, kind="number"), "bias": bias,
            "norm": "rms", "mlp": "gated", **rope(cfg)}  # fmt: skip
    kv = need(cfg, "num_key_value_heads", default=H)
    if kv != H:
        body["num_kv_heads"] = kv
    if head_dim is not None:
        body["head_dim"] = head_dim
    if window(cfg, context) is not None:
        body["window"] = window(cfg, context)
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
        ("a sliding window", c.window is not None),
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
        "head_dim": c.head_dim or E // H, "hidden_act": ACTIVATION_OUT[c.activation],
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
