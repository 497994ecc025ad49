"""The op case table: every row feeds the gradcheck and the torch comparison.

``DIFF_CASES`` have inputs to differentiate; ``FORWARD_CASES`` hold the ops with no
gradient, checked against torch on the forward pass only. ``NOT_IN_TABLE`` names the
ops no row can check against torch, and says where they are checked instead.
"""

from __future__ import annotations

from dataclasses import replace

import cases_attention
import cases_elementwise
import cases_nn
import cases_norm
import cases_quant
import cases_recurrent
import cases_shape
import cases_unfold
import torch

import scellis as sc
from helpers import Case
from inputs import Distinct, Idx, Mask, N, Ties

DIFF_CASES = (
    cases_elementwise.CASES
    + cases_shape.CASES
    + cases_nn.CASES
    + cases_norm.CASES
    + cases_recurrent.CASES
    + cases_attention.CASES
    + cases_quant.CASES
    + cases_unfold.CASES
)
# rows tagged no_fd say why in their comment; the coverage test holds the rest to every op
GRADCHECK_CASES = [c for c in DIFF_CASES if "no_fd" not in c.tags]

FORWARD_CASES = [
    Case("eq", lambda a, b: a == b, torch.eq, [Idx((3, 7), 3), Ties(0)]),
    Case("ne", lambda a, b: a != b, torch.ne, [N((3, 7)), Ties(0)]),
    Case("lt", lambda a, b: a < b, torch.lt, [N((3, 7)), Ties(0)]),
    Case("le", lambda a, b: a <= b, torch.le, [Idx((129,), 4), Ties(0)]),
    Case("gt", lambda a, b: a > b, torch.gt, [N((7, 3)), Ties(0)]),
    Case("ge", lambda a, b: a >= b, torch.ge, [N((7, 3)), Ties(0)]),
    Case("eq_broadcast", lambda a, b: a == b, torch.eq, [Idx((3, 7), 3), Idx((7,), 3)]),
    Case("logical_and", lambda a, b: a & b, torch.logical_and, [Mask((3, 7)), Mask((7,))]),
    Case("logical_or", lambda a, b: a | b, torch.logical_or, [Mask((3, 7)), Mask((3, 1))]),
    Case("logical_not", lambda a: ~a, torch.logical_not, [Mask((129,))]),
    Case("sign_int", lambda a: a.sign(), torch.sign, [Idx((3, 7), 3, lo=-2)]),
    Case(
        "sign_float",
        lambda a, b: (a * (b > 0).cast(a.dtype)).sign(),
        lambda a, b: (a * (b > 0).to(a.dtype)).sign(),
        [N((3, 7)), N((3, 7))],
    ),
    Case("argmax_all", lambda x: x.argmax(), torch.argmax, [Distinct((3, 7))]),
    Case("argmax_axis", lambda x: x.argmax(1), lambda x: torch.argmax(x, 1), [Distinct((3, 7))]),
    Case(
        "argmax_keepdim",
        lambda x: x.argmax(0, keepdim=True),
        lambda x: torch.argmax(x, 0, keepdim=True),
        [Distinct((129, 3))],
    ),
    Case("full", lambda: sc.full((3, 7), 2.5), lambda: torch.full((3, 7), 2.5), []),
    Case("arange", lambda: sc.arange(129), lambda: torch.arange(129), []),
    Case(
        "arange_f32",
        lambda: sc.arange(7, dtype="f32"),
        lambda: torch.arange(7, dtype=torch.float32),
        [],
    ),
]
FORWARD_CASES = [replace(c, grad=()) for c in FORWARD_CASES]

# ops whose values are Philox draws: torch has no twin; test_philox.py checks both
# kernels bit for bit against the pure-Python Philox instead
NOT_IN_TABLE = {
    "rand_uniform": "Philox uniform draws; test_philox.py vs base.rng.uniform",
    "bernoulli": "Philox mask; test_philox.py vs base.rng.bernoulli (and the dropout row)",
    # a backward-only primitive: no forward of its own, run by lstm_seq's VJP
    "lstm_seq_backward": "lstm_seq's reverse walk; checked by the lstm_seq rows' backward",
    "gru_seq_backward": "gru_seq's reverse walk; checked by the gru_seq rows' backward",
    "flash_attention_backward": "flash attention's VJP; checked by the flash rows' backward",
    "row_norm_backward": "row_norm's VJP; checked by the norm rows' backward",
    "dense_act_backward": "dense_act's VJP core; checked by the dense_act rows' backward",
    "gelu_erf_grad": "gelu_erf's VJP; checked by the gelu_erf rows' backward",
    "gelu_tanh_grad": "gelu_tanh's VJP; checked by the gelu_tanh rows' backward",
    "silu_grad": "silu's VJP; checked by the silu rows' backward",
    "relu_grad": "relu's VJP; checked by the relu rows' backward",
    # integer results, no torch twin: bitwise against the pure-Python base.quant.quantize
    "quant_absmax": "test_qlora_quantize.py and test_qlora_webgpu.py vs base.quant.quantize",
    "quant_codes": "test_qlora_quantize.py and test_qlora_webgpu.py vs base.quant.quantize",
    "dequantize": "test_qlora_double.py and test_qlora_webgpu.py vs base.quant.dequantize",
    # bits, not maths: bitwise against NumPy's float16 -> float32 on both devices
    "widen_f16": "codecs/test_f16_weights.py vs NumPy's astype",
}

ALL_CASES = DIFF_CASES + FORWARD_CASES
_names = [c.name for c in ALL_CASES]
assert len(_names) == len(set(_names)), "case names must be unique"
