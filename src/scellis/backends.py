"""torch.backends' flags a script sets or checks: there is no cuDNN, MPS or CUDA here.

``cudnn.benchmark``/``cudnn.deterministic`` and ``cuda.matmul.allow_tf32`` can be set
(they change nothing: the engine's kernels are its own); ``mps.is_available()`` is
False, so ``"mps" if torch.backends.mps.is_available() else "cpu"`` picks the reference
device.
"""

from types import SimpleNamespace


def _never() -> bool:
    return False


cudnn = SimpleNamespace(benchmark=False, deterministic=False, enabled=True, allow_tf32=True,
                        is_available=_never, version=lambda: None)  # fmt: skip
mps = SimpleNamespace(is_available=_never, is_built=_never)
cuda = SimpleNamespace(matmul=SimpleNamespace(allow_tf32=False), is_built=_never)
mkldnn = SimpleNamespace(enabled=False, is_available=_never)
