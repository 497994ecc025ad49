"""VJP rule of the fused softmax cross-entropy (autograd layer): the saved basis, scaled.

``softmax_xent`` packs the logits' gradient basis with the loss (ops/xent.py); the
logits' gradient is ``basis * (g * (1 / count))``, g being the mean loss's cotangent.
"""

from __future__ import annotations

from ..ops.xent import INV_COUNT, LOSS

LOSS_SAVES = frozenset({"softmax_xent"})


def _softmax_xent(node, g):
    x = node.inputs[0]
    packed = node.saved["out"]
    r, c = x.shape
    end = packed.shape[0]
    factor = g[end - LOSS : end - LOSS + 1] * packed[end - INV_COUNT : end]
    return (packed[0 : r * c].reshape(r, c) * factor.reshape(1, 1)), None


LOSS_VJP = {"softmax_xent": _softmax_xent}
# neither input's value: the basis is in the saved result
LOSS_READS = {"softmax_xent": lambda needs, attrs: (False, False)}
