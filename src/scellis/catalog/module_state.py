"""Loading a state dict into a module tree in place (catalog layer).

Keys are dotted paths; each module of the tree may first rename or unpack the
incoming entries under its prefix (torch's BatchNorm keeps a ``num_batches_tracked``
the catalog block has no use for). Values are written into the live tensors, never swapped in,
so optimizers keep the parameters they hold. Missing and unexpected keys are reported
as torch reports them.
"""

from __future__ import annotations

from collections import namedtuple

from ..autograd import no_grad
from ..base.errors import ScellisError
from ..runtime.creation import tensor
from ..runtime.inplace import transfer, write_into
from ..runtime.tensor import Tensor

IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


def translated(module, state: dict) -> dict:
    """``state`` with every module's ``translate_state`` applied, parents first."""
    cur = dict(state)
    for name, m in module.named_modules(remove_duplicate=False):
        prefix = f"{name}." if name else ""
        mine = {k[len(prefix) :]: v for k, v in cur.items() if k.startswith(prefix)}
        rest = {k: v for k, v in cur.items() if not k.startswith(prefix)}
        cur = {**rest, **{prefix + k: v for k, v in m.translate_state(mine).items()}}
    return cur


def exported(module, state: dict) -> dict:
    """``state`` (live names) in torch's order (each module's parameters, then its
    buffers, then its children) with every module's ``export_state`` applied, parents
    first: torch's names for the torch-shaped layers of the tree, in their places."""
    order = []
    for name, m in module.named_modules(remove_duplicate=False):
        prefix = f"{name}." if name else ""
        order += [prefix + k for k in (*m._params, *m._buffers) if prefix + k in state]
    cur = {k: state[k] for k in order}
    for name, m in module.named_modules(remove_duplicate=False):
        if not m.exports_torch_names:
            continue
        prefix = f"{name}." if name else ""
        mine = {k[len(prefix) :]: v for k, v in cur.items() if k.startswith(prefix)}
        renamed = {prefix + k: v for k, v in m.export_state(mine).items()}
        out, placed = {}, False
        for k, v in cur.items():
            if not k.startswith(prefix):
                out[k] = v
            elif not placed:  # the module's entries where its first one stood
                out.update(renamed)
                placed = True
        cur = out
    return cur


def as_tensor(value, like: Tensor) -> Tensor:
    """``value`` (our tensor, a torch tensor, an array, nested lists) on ``like``'s
    device in ``like``'s dtype. A torch tensor is duck typed (torch is never imported
    here): read as an array where torch can make one, else (bf16) as lists."""
    if isinstance(value, Tensor):
        return transfer(value.detach(), like.device, like.dtype)
    if not hasattr(value, "__array_interface__") and hasattr(value, "detach"):
        host = value.detach().cpu()
        try:
            value = host.numpy()
        except (TypeError, RuntimeError):
            value = host.tolist()
    return tensor(value, device=like.device, dtype=like.dtype)


def _report(module, missing: list, unexpected: list) -> str:
    lines = [f"Error(s) in loading state_dict for {type(module).__name__}:"]
    if missing:
        lines.append("Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing))
    if unexpected:
        lines.append("Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected))
    return "\n\t".join(lines)


@no_grad()
def load_state(module, state_dict, strict: bool = True) -> IncompatibleKeys:
    own = module.live_state()
    incoming = translated(module, {str(k): v for k, v in dict(state_dict).items()})
    missing = [k for k in own if k not in incoming]
    unexpected = [k for k in incoming if k not in own]
    if strict and (missing or unexpected):
        raise ScellisError(_report(module, missing, unexpected))
    values = {}
    for k, target in own.items():
        if k not in incoming:
            continue
        v = as_tensor(incoming[k], target)
        if tuple(v.shape) != tuple(target.shape):
            raise ScellisError(
                f"size mismatch for {k}: copying a param with shape {list(v.shape)}, "
                f"the shape in the current model is {list(target.shape)}"
            )
        values[k] = v
    for k, v in values.items():  # nothing is written unless everything fits
        write_into(own[k], v)
    return IncompatibleKeys(missing, unexpected)
