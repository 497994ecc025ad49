"""Hugging Face folders and tokenizer.json files need none of the native libraries: the
import, an export and the tokenizer run with NumPy, torch, tokenizers and transformers
blocked (as in the browser), and give what they give natively."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hfmodels import gpt2

tk = pytest.importorskip("tokenizers")

import scellis  # noqa: E402

SRC = str(Path(scellis.__file__).resolve().parent.parent)

CHILD = """
import json, sys
for name in ("numpy", "wgpu", "torch", "safetensors", "tokenizers", "transformers", "regex"):
    sys.modules[name] = None
from scellis.codecs.convert import export_file, import_file
from scellis.data.tokenizer import load
folder, out, text = sys.argv[1], sys.argv[2], sys.argv[3]
res = import_file(folder, store=out + "/store", to=out + "/m.sml")
export_file(out + "/m.sml", "hf", out=out + "/hf", store=out + "/store", force=True)
tok = load(folder)
ids = tok.encode(text)
print(json.dumps({"blocks": list(res.record["blocks"]), "ids": ids, "text": tok.decode(ids)}))
"""


def test_hf_folder_and_tokenizer_with_native_libraries_blocked(tmp_path):
    folder = tmp_path / "hf"
    gpt2().save_pretrained(folder)
    tok = tk.Tokenizer(tk.models.BPE())
    tok.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tk.decoders.ByteLevel()
    tok.train_from_iterator(["héllo wörld 123, héllo again 😀"] * 4, tk.trainers.BpeTrainer(
        vocab_size=280, initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))  # fmt: skip
    tok.save(str(folder / "tokenizer.json"))
    text = "héllo  wörld 😀 4567"
    res = subprocess.run(
        [sys.executable, "-c", CHILD, str(folder), str(tmp_path), text], capture_output=True,
        text=True, timeout=300, env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout)
    assert got["blocks"] == ["tok", "pos", "body", "head"]
    assert got["ids"] == tok.encode(text).ids and got["text"] == text
    assert (tmp_path / "hf" / "model.safetensors").is_file()
