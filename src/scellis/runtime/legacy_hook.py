"""Where ``Tensor.__init__`` finds torch's legacy constructor (runtime layer).

The engine makes a tensor from a device buffer and its geometry; a script written for
torch calls the class with torch's arguments instead (``torch.Tensor(2, 3)``,
``torch.Tensor([1., 2.])``). That constructor is written over the creation functions,
which import the Tensor, so the runtime package sets it here once both exist.
"""

from __future__ import annotations

# (tensor being initialised, torch's arguments, device) -> None: fills the tensor's slots
LEGACY: list = [None]
