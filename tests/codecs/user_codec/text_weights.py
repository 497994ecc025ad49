"""A user's codec: weights as text lines, ``NAME DTYPE DIMxDIM v0 v1 ...``, after a magic line.

Registered through the public catalog API exactly as the built-in codecs are.
"""

from dataclasses import dataclass

from scellis.base.errors import ScellisError
from scellis.catalog import field, register
from scellis.codecs import Codec, Imported, RawTensor
from scellis.codecs.raw import from_values

MAGIC = b"#text-weights 1\n"


@dataclass(frozen=True)
class TextWeightsConfig:
    """Weights as one text line per tensor (a toy format for the extension tests)."""

    max_lines: int = field(10_000, doc="refuse files with more tensors than this", min=1)


class TextWeights(Codec):
    suffixes = (".wtxt",)
    can_write = True

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        return head.startswith(MAGIC)

    def read(self, path) -> Imported:
        lines = path.read_text().splitlines()[1:]
        if len(lines) > self.config.max_lines:
            raise ScellisError(f"{path}: more than {self.config.max_lines} tensors")
        out = {}
        for n, line in enumerate(lines, 2):
            name, dtype, dims, *vals = line.split()
            shape = tuple(int(d) for d in dims.split("x")) if dims != "-" else ()
            cast = float if dtype.startswith("F") else int
            try:
                out[name] = from_values(dtype, shape, [cast(v) for v in vals])
            except ScellisError as e:
                raise ScellisError(f"{path}:{n}: {e}") from None
        return Imported(out)

    def write(self, path, tensors: dict[str, RawTensor], record) -> list:
        rows = [MAGIC.decode().rstrip("\n")]
        for name, t in tensors.items():
            dims = "x".join(map(str, t.shape)) or "-"
            rows.append(" ".join([name, t.dtype, dims, *map(repr, t.values())]))
        path.write_text("\n".join(rows) + "\n")
        return [path]


register("user/codec/text_weights", "codec", TextWeightsConfig, TextWeights)
