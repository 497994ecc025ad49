"""Hugging Face model folders as a codec (codecs layer): ``config.json`` + safetensors.

Reading builds the record from the config (the family's ``record``; a causal LM's with
AdamW and cross-entropy, ready to fine-tune once a data section is added) and renames
the checkpoint's tensors to the record's parameter paths (its ``weights``); a name the
family does not place is an error, never dropped, so nothing of the model's maths is
lost silently. Writing goes back: ``config.json``, ``model.safetensors`` and a
``generation_config.json``, which ``transformers``' ``AutoModelForCausalLM``
(GPT-2, Llama, Qwen2) or ``AutoModel``/``AutoModelForMaskedLM`` (BERT) loads.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from ...base.errors import ScellisError, shown
from ...base.files import write_file
from ...catalog.registry import field, register
from ...model.build import RecordModel
from ...store.safetensors import dumps
from ..base import Codec, Imported
from ..raw import RawTensor
from . import bert, gpt2, llama
from .common import chain, check_config, check_sizes, model_name
from .folder import read_config, read_weights, tokenizer_file

FAMILIES = {t: fam for fam in (gpt2, llama, bert) for t in fam.MODEL_TYPES}
# the chain of blocks (from the input on) a record must be to be written as each family
LAYOUTS = (
    (gpt2, ("nn/embedding", "nn/learned_position", "nn/transformer", "nn/lm_head")),
    (llama, ("nn/embedding", "nn/transformer", "nn/lm_head")),
    (bert, ("nn/embedding", "nn/learned_position", "nn/token_type", "nn/layer_norm",
            "nn/transformer")),
    (bert, ("nn/embedding", "nn/learned_position", "nn/token_type", "nn/layer_norm",
            "nn/transformer", "nn/linear", "nn/activation", "nn/layer_norm", "nn/lm_head")),
)  # fmt: skip


def supported() -> str:
    return ", ".join(sorted(FAMILIES))


def _check_shapes(path: Path, record: dict, mapped: dict, theirs: dict) -> None:
    """Every mapped tensor has its parameter's shape, or the error names the checkpoint's
    tensor: a config.json whose sizes disagree with its weights is caught here, where the
    Hugging Face name is still known."""
    shapes = {k: tuple(p.shape) for k, p in RecordModel(record, device="null").named_parameters()}
    names = {id(t): k for k, t in theirs.items()}
    for ours, t in mapped.items():
        want = shapes.get(ours)
        if want is not None and tuple(t.shape) != want:
            name = names.get(id(t), ours)
            raise ScellisError(
                f"{path}: tensor {name!r} is {list(t.shape)} but config.json's sizes make it "
                f"{list(want)}; the config does not describe these weights"
            )


@dataclass(frozen=True)
class HFConfig:
    """Hugging Face model folders: config.json with model.safetensors (or shards)."""

    max_bytes: int = field(64 << 30, doc="refuse weights larger than this in all", min=1)
    context: int = field(
        256, doc="the record input's sequence length (at most the model's positions)", min=1
    )


class HFCodec(Codec):
    suffixes = ()  # a folder, found by its config.json
    can_write = True
    writes_folder = True
    folder_files = ("config.json", "generation_config.json", "model.safetensors")

    @classmethod
    def sniff_dir(cls, path: Path) -> bool:
        return os.path.lexists(path / "config.json")  # a FIFO there is refused when read

    def read(self, path: Path) -> Imported:
        if not path.is_dir():
            raise ScellisError(f"{path}: a Hugging Face model is a folder with config.json")
        cfg = read_config(path)
        check_config(cfg, f"{path}/config.json")
        mt = cfg.get("model_type")
        fam = FAMILIES.get(mt) if isinstance(mt, str) else None
        if mt is None:
            raise ScellisError(
                f"{path}/config.json: has no 'model_type' (supported: {supported()})"
            )
        if fam is None:
            raise ScellisError(
                f"{path}/config.json: model_type {shown(mt, 40)!r} is not supported; "
                f"supported: {supported()}"
            )
        tensors = read_weights(path, self.config.max_bytes)
        check_sizes(cfg, tensors, f"{path}/config.json")  # before anything is built from it
        name = model_name(path.resolve().name, mt)
        if fam is bert:
            rec = bert.record(cfg, name, self.config.context, tensors)
        else:
            rec = fam.record(cfg, name, self.config.context)
        if fam is not bert:  # a causal LM: ready to fine-tune on text (add a data section)
            rec["optimizer"] = {"block_id": "training/optimizer/adamw", "lr": 1.0e-4,
                                "weight_decay": 0.0}  # fmt: skip
            rec["loss"] = {"block_id": "training/loss/cross_entropy"}
        rec.update({"determinism_tier": "debug", "seed": 0})
        mapped, left = fam.weights(cfg, tensors)
        if left:
            arch = ", ".join(cfg.get("architectures") or []) or mt
            raise ScellisError(
                f"{path}: the {mt} layout has no place for {len(left)} tensor(s) of {arch}: "
                + ", ".join(left[:6])
                + (" ..." if len(left) > 6 else "")
                + " (imported: the base model with its causal-LM or masked-LM head)"
            )
        _check_shapes(path, rec, mapped, tensors)
        meta = {"model_type": mt, "architectures": cfg.get("architectures") or []}
        tokenizer = tokenizer_file(path)
        if tokenizer is not None:
            meta["tokenizer"] = str(tokenizer)
        return Imported(mapped, rec, meta)

    def write(self, path: Path, tensors: dict[str, RawTensor], record: dict | None) -> list[Path]:
        if not record:
            raise ScellisError("a Hugging Face export needs the model's record")
        kinds = chain(record)
        fam = next((f for f, ids in LAYOUTS if kinds == ids), None)
        if fam is llama and not fam.matches(record):
            fam = None
        if fam is None:
            raise ScellisError(
                f"no Hugging Face layout fits the chain {' -> '.join(kinds)}; exportable: "
                "GPT-2 (embedding, learned_position, transformer, lm_head), Llama/Qwen2 "
                "(embedding, transformer with rotary, lm_head) and BERT"
            )
        cfg, out = fam.export(record, tensors)
        cfg["torch_dtype"] = "float32"
        path.mkdir(parents=True, exist_ok=True)
        files = [path / "config.json", path / "generation_config.json", path / "model.safetensors"]
        write_file(files[0], (json.dumps(cfg, indent=2, sort_keys=True) + "\n").encode())
        gen = {k: cfg[k] for k in ("bos_token_id", "eos_token_id") if cfg.get(k) is not None}
        write_file(files[1], (json.dumps(gen, indent=2) + "\n").encode())
        body = {k: (t.dtype, tuple(t.shape), t.data) for k, t in out.items()}
        write_file(files[2], dumps(body, {"format": "pt"}))
        return files


register("codec/hf", "codec", HFConfig, HFCodec, builtin=True)
