"""The image blocks as ONNX nodes (codecs layer): Conv, MaxPool and AveragePool on
[B, C, H, W], as torch.onnx.export writes torch's Conv2d and pools (opset 17).

ONNX pads are [top, left, bottom, right]; a 'same' convolution's padding is written out
(the extra pixel of an even span goes after, as the forward puts it), and the average
counts the padding, as the block does.
"""

from __future__ import annotations

from ...catalog.blocks.image_ops import conv_padding, pair
from .writer import Graph

IMAGE_BLOCKS = ("nn/conv2d", "nn/max_pool2d", "nn/avg_pool2d")


def _conv(g: Graph, x: str, name: str, spec: dict, w: dict) -> str:
    k = pair(spec["kernel_size"])
    s, d = pair(spec.get("stride", 1) or 1), pair(spec.get("dilation", 1) or 1)
    lo, hi = conv_padding(spec.get("padding", 0) or 0, k, d, s)
    ins = [x, g.init(f"{name}.weight", w[f"{name}.weight"])]
    if f"{name}.bias" in w:
        ins.append(g.init(f"{name}.bias", w[f"{name}.bias"]))
    attrs = dict(kernel_shape=list(k), strides=list(s), dilations=list(d), pads=[*lo, *hi])
    return g.node("Conv", ins, name, group=int(spec.get("groups", 1) or 1), **attrs)[0]


def _pool(g: Graph, x: str, name: str, spec: dict) -> str:
    k = pair(spec["kernel_size"])
    s = pair(spec["stride"]) if spec.get("stride") is not None else k
    p = pair(spec.get("padding", 0) or 0)
    attrs = dict(kernel_shape=list(k), strides=list(s), pads=[*p, *p],
                 ceil_mode=int(bool(spec.get("ceil_mode"))))  # fmt: skip
    if spec["block_id"] == "nn/max_pool2d":
        return g.node("MaxPool", [x], name, **attrs)[0]
    return g.node("AveragePool", [x], name, count_include_pad=1, **attrs)[0]


def image_block(g: Graph, x: str, name: str, spec: dict, w: dict) -> str:
    if spec["block_id"] == "nn/conv2d":
        return _conv(g, x, name, spec, w)
    return _pool(g, x, name, spec)
