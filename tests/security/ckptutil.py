"""A real train.py checkpoint to mutate: a tiny run trained for four steps and exported
as a torch-train package (no torch needed: the export writes the checkpoint itself).
``rewrite`` puts a changed state or changed tensors back in the same file format."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from scellis.cli.main import main
from scellis.store.records import Records
from scellis.store.safetensors import dumps, loads

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from storeutil import write_record  # noqa: E402

CHECKPOINT = "pkg/checkpoints/step-00000004.safetensors"


def make_package(folder: Path) -> Path:
    """``folder/pkg`` exported from a four-step run; the checkpoint's path."""
    rec = write_record(folder)
    store = folder / "trained"
    assert main(["train", str(rec), "--device", "reference", "--store", str(store),
                 "--max-steps", "4", "--json"]) == 0  # fmt: skip
    rid = run_ids(store)[0]
    assert main(["export", f"{rid}@4", "--to", "torch-train", str(folder / "pkg"),
                 "--store", str(store)]) == 0  # fmt: skip
    return folder / CHECKPOINT


def parts(path: Path) -> tuple[dict, dict]:
    """(tensors {name: (dtype, shape, bytes)}, state) of a checkpoint file."""
    tensors, meta = loads(path.read_bytes())
    return ({k: (c, tuple(s), bytes(v)) for k, (c, s, v) in tensors.items()},
            json.loads(meta["state"]))  # fmt: skip


def rewrite(path: Path, tensors: dict, state=None, *, state_text: str | None = None) -> None:
    text = state_text if state_text is not None else json.dumps(state)
    path.write_bytes(dumps(tensors, {"format": "scellis.torch-train/1", "state": text}))


def run_ids(store: Path) -> list[str]:
    if not (Path(store) / "records.sqlite").exists():
        return []
    r = Records(store)
    try:
        return [x["id"] for x in r.runs()]
    finally:
        r.close()
