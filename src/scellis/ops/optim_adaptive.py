"""Host scalars of Adagrad, NAdam and RAdam's fused updates (ops layer), as torch computes them.

Each function maps an update op's attrs to its kernel scalars, in double precision,
following torch.optim's single-tensor loops term for term:

- Adagrad: ``clr = lr / (1 + (t - 1) lr_decay)``; ``sum += g^2`` (``sum`` starts at
  ``initial_accumulator_value``, so the first step reads that instead of the buffer);
  ``p -= clr g / (sqrt(sum) + eps)``.
- NAdam: ``mu_t = b1 (1 - 0.5 * 0.96^(t momentum_decay))``; the two step sizes use the
  running product of the mu's, which torch keeps as an f32 tensor, so it is rounded to
  f32 after every factor here too.
- RAdam: the length of the approximated SMA ``rho_t`` decides on the host whether the
  step is rectified (``rho_t > 5``: adaptive, scaled by ``rect``) or plain momentum SGD.
"""

from __future__ import annotations

import math
import struct


def _sign(attrs) -> float:
    return -1.0 if attrs.get("maximize") else 1.0


def _weight_decay(a) -> dict:
    """L2 (``wd``, added to the gradient) or decoupled (``decay``, ``p *= decay`` first)."""
    decoupled = a.get("decoupled_weight_decay", False)
    return {
        "wd": 0.0 if decoupled else a["weight_decay"],
        "decay": 1 - a["lr"] * a["weight_decay"] if decoupled else 1.0,
    }


def adagrad_scalars(a) -> dict:
    step = float(a["step"])
    return {
        "gsign": _sign(a),
        "wd": a["weight_decay"],
        "init": a["initial_accumulator_value"],
        "first": 1.0 if a["step"] == 1 else 0.0,
        "eps": a["eps"],
        "neg_clr": -(a["lr"] / (1 + (step - 1) * a["lr_decay"])),
    }


def _f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


# (beta1, momentum_decay) -> (step, product): where the last call left off
_MU_CURSORS: dict[tuple[float, float], tuple[int, float]] = {}


def mu_product(beta1: float, momentum_decay: float, step: int) -> float:
    """The f32 running product of NAdam's mu_1..mu_step (1.0 at step 0). A cursor per
    (beta1, momentum_decay) remembers the last step asked for, so steps asked in order
    (as training asks them) cost one multiplication each; an earlier step starts over."""
    t, prod = _MU_CURSORS.get((beta1, momentum_decay), (0, 1.0))
    if t > step:
        t, prod = 0, 1.0
    while t < step:
        t += 1
        prod = _f32(prod * _mu(beta1, momentum_decay, t))
    _MU_CURSORS[(beta1, momentum_decay)] = (t, prod)
    return prod


def _mu(beta1: float, momentum_decay: float, step: float) -> float:
    return beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))


def nadam_scalars(a) -> dict:
    b1, b2, md, step = a["beta1"], a["beta2"], a["momentum_decay"], a["step"]
    mu, mu_next = _mu(b1, md, float(step)), _mu(b1, md, float(step + 1))
    prod = mu_product(b1, md, step)
    return {
        "gsign": _sign(a),
        **_weight_decay(a),
        "w1": 1 - b1,
        "b2": b2,
        "w2": 1 - b2,
        "bc2": 1 - b2 ** float(step),
        "eps": a["eps"],
        "c_grad": -a["lr"] * (1.0 - mu) / (1.0 - prod),
        "c_avg": (-a["lr"] * mu_next) / (1.0 - prod * mu_next),
    }


def radam_scalars(a) -> dict:
    b1, b2, step = a["beta1"], a["beta2"], float(a["step"])
    bc1, bc2 = 1 - b1**step, 1 - b2**step
    rho_inf = 2 / (1 - b2) - 1
    rho_t = rho_inf - 2 * step * (b2**step) / bc2
    rectify = rho_t > 5.0
    rect = (
        math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
        if rectify
        else 1.0
    )
    return {
        "gsign": _sign(a),
        **_weight_decay(a),
        "w1": 1 - b1,
        "b2": b2,
        "w2": 1 - b2,
        "bc2_sqrt": bc2**0.5,
        "eps": a["eps"],
        "rectify": 1.0 if rectify else 0.0,
        "neg_step": -a["lr"] * rect / bc1,
    }
