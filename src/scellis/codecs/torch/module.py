"""``export --to torch`` as a codec (codecs layer): a plain PyTorch module plus its weights.

Writes ``<dir>/model.py`` (``source``) and ``<dir>/state_dict.pt`` (the torch
codec's archive, readable with ``torch.load(..., weights_only=True)``). Write-only:
reading a module back would mean running its code.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...base.errors import ScellisError
from ...base.files import write_file
from ...catalog.registry import register
from ...model.build import RecordModel
from ..base import Codec
from ..raw import RawTensor
from .pt import TorchCodec, TorchConfig
from .source import module_source


@dataclass(frozen=True)
class TorchModuleConfig:
    """A PyTorch nn.Module source file (model.py) and state dict (state_dict.pt), no Scellis."""


class TorchModuleCodec(Codec):
    suffixes = ()  # a folder, chosen by name (--to torch), never by suffix
    can_read = False
    can_write = True
    writes_folder = True
    folder_files = ("model.py", "state_dict.pt")

    def write(self, path: Path, tensors: dict[str, RawTensor], record: dict | None) -> list[Path]:
        if not record:
            raise ScellisError("a torch module export needs the model's record")
        # the null device resolves block order and wiring without computing anything
        m = RecordModel(record, device="null")
        want = [k for k, _ in m.named_parameters()]
        if set(want) != set(tensors):
            missing = sorted(set(want) - set(tensors))
            raise ScellisError(f"the weights do not cover the record: missing {missing[:6]}")
        text = module_source(record, m.order, m.wiring)  # refuses before anything is written
        path.mkdir(parents=True, exist_ok=True)
        src = path / "model.py"
        write_file(src, text.encode("utf-8"))
        weights = path / "state_dict.pt"
        TorchCodec(TorchConfig()).write(weights, {k: tensors[k] for k in want}, None)
        return [src, weights]


register("codec/torch_module", "codec", TorchModuleConfig, TorchModuleCodec, builtin=True)
