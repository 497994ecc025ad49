"""Tiny real model folders for the hostile-input tests: a Llama-family Hugging Face
folder (config.json + safetensors of random values) and TF.js Layers model.json files
with their shards, written by hand so the tests need neither transformers nor node."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from scellis.store.safetensors import dumps

E, FF, V, LAYERS = 8, 16, 32, 2
LLAMA = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": E,
    "num_attention_heads": 2,
    "num_key_value_heads": 2,
    "num_hidden_layers": LAYERS,
    "intermediate_size": FF,
    "vocab_size": V,
    "max_position_embeddings": 64,
    "rms_norm_eps": 1e-6,
    "hidden_act": "silu",
    "tie_word_embeddings": False,
    "rope_theta": 10000.0,
}


def llama_tensors(seed: int = 0, layers: int = LAYERS) -> dict[str, np.ndarray]:
    """Random (never zero) weights of the LLAMA config, by Hugging Face name."""
    rng = np.random.default_rng(seed)
    shapes = {
        "model.embed_tokens.weight": (V, E),
        "model.norm.weight": (E,),
        "lm_head.weight": (V, E),
    }
    for i in range(layers):
        h = f"model.layers.{i}."
        shapes.update(
            {
                h + "input_layernorm.weight": (E,),
                h + "post_attention_layernorm.weight": (E,),
                h + "self_attn.q_proj.weight": (E, E),
                h + "self_attn.k_proj.weight": (E, E),
                h + "self_attn.v_proj.weight": (E, E),
                h + "self_attn.o_proj.weight": (E, E),
                h + "mlp.gate_proj.weight": (FF, E),
                h + "mlp.up_proj.weight": (FF, E),
                h + "mlp.down_proj.weight": (E, FF),
            }
        )
    return {k: (rng.standard_normal(s) + 0.5).astype("<f4") for k, s in shapes.items()}


def safetensors_bytes(tensors: dict[str, np.ndarray]) -> bytes:
    return dumps({k: ("F32", v.shape, v.tobytes()) for k, v in tensors.items()})


def hf_folder(folder: Path, config: dict | None = None, *, sharded: bool = False) -> Path:
    """A Llama folder: config.json and model.safetensors (or two shards and an index)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(LLAMA if config is None else config))
    tensors = llama_tensors()
    if not sharded:
        (folder / "model.safetensors").write_bytes(safetensors_bytes(tensors))
        return folder
    names = sorted(tensors)
    halves = {
        "model-00001-of-00002.safetensors": names[::2],
        "model-00002-of-00002.safetensors": names[1::2],
    }
    wmap = {}
    for shard, part in halves.items():
        (folder / shard).write_bytes(safetensors_bytes({k: tensors[k] for k in part}))
        wmap.update(dict.fromkeys(part, shard))
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": wmap}))
    return folder


def tfjs_doc(layers: list, inputs, outputs, weights: list, paths=("w.bin",)) -> dict:
    topology = {
        "class_name": "Model",
        "config": {"layers": layers, "input_layers": inputs, "output_layers": outputs},
    }
    return {
        "format": "layers-model",
        "modelTopology": topology,
        "weightsManifest": [{"paths": list(paths), "weights": weights}],
    }


def tfjs_folder(folder: Path, chain: int = 1, *, backwards: bool = False, seed: int = 0) -> Path:
    """A functional TF.js model: input [None, 3] -> Dense(2) -> ``chain`` ReLU
    Activation layers (listed last-first with ``backwards``); model.json and w.bin."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    kernel = (rng.standard_normal((3, 2)) + 0.5).astype("<f4")
    bias = (rng.standard_normal(2) + 0.5).astype("<f4")
    (folder / "w.bin").write_bytes(kernel.tobytes() + bias.tobytes())
    layers = [
        {
            "class_name": "InputLayer",
            "name": "x",
            "config": {"name": "x", "batch_input_shape": [None, 3]},
        },
        {
            "class_name": "Dense",
            "name": "d",
            "inbound_nodes": [[["x", 0, 0, {}]]],
            "config": {"name": "d", "units": 2, "activation": "linear", "use_bias": True},
        },
    ]
    acts, prev = [], "d"
    for i in range(chain):
        acts.append(
            {
                "class_name": "Activation",
                "name": f"a{i}",
                "inbound_nodes": [[[prev, 0, 0, {}]]],
                "config": {"name": f"a{i}", "activation": "relu"},
            }
        )
        prev = f"a{i}"
    layers += acts[::-1] if backwards else acts
    weights = [
        {"name": "d/kernel", "shape": [3, 2], "dtype": "float32"},
        {"name": "d/bias", "shape": [2], "dtype": "float32"},
    ]
    doc = tfjs_doc(layers, [["x", 0, 0]], [[prev, 0, 0]], weights)
    (folder / "model.json").write_text(json.dumps(doc))
    return folder
