"""Optimizer primitives (ops layer): fused in-place updates over flat parameter buffers.

Each ``<name>_update`` op reads one flat gradient and overwrites, in one pass, the
flat parameter buffer and the optimizer's flat state buffers (its *targets*, run
through ``dispatch.apply_inplace``). With ``grads`` = k (the multi-tensor form, the
``fast`` tier's) it reads k gradients instead, each where the backward left it, laid
end to end over the targets: the gather into a flat gradient buffer and the update
become one dispatch. An input after the gradient(s), a 0-d bool (the overflow
guard's finite flag), gates it: where the flag is False the kernel writes nothing, so a
skipped step leaves every target bitwise as it was without a copy to restore from.
``flat_gather`` copies many tensors into one flat target (the gradients of a parameter
group into its gradient buffer).

Hyper-parameters travel as attrs; ``scalars(op, attrs)`` turns them into the
kernel's scalar operands, computed once here in double precision (as torch does on
the host) so the reference and WGSL kernels round the very same numbers. Nothing
that changes per step (lr, bias corrections, the first-step flag) is structural, so
a scheduler never forces a recompile; only flags that add or remove a state buffer
(``momentum != 0``, ``amsgrad``, ``centered``, ``nesterov``) select a kernel variant.
Adagrad, NAdam and RAdam's scalars live in ``optim_adaptive``.
"""

from __future__ import annotations

from ..base.dtypes import bool_
from ..base.errors import DTypeError, ShapeError
from .optim_adaptive import adagrad_scalars, nadam_scalars, radam_scalars
from .table import OpDef, Spec, register

UPDATE_OPS = (
    "sgd_update",
    "adam_update",
    "adamw_update",
    "rmsprop_update",
    "lion_update",
    "adagrad_update",
    "nadam_update",
    "radam_update",
)


def state_names(op: str, attrs: dict) -> tuple[str, ...]:
    """The state buffers an update op writes after the parameters, in target order."""
    if op == "sgd_update":
        return ("momentum_buffer",) if attrs["momentum"] != 0 else ()
    if op in ("adam_update", "adamw_update"):
        return ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if attrs["amsgrad"] else ())
    if op == "rmsprop_update":
        extra = ("momentum_buffer",) if attrs["momentum"] > 0 else ()
        return ("square_avg",) + extra + (("grad_avg",) if attrs["centered"] else ())
    if op == "lion_update":
        return ("exp_avg",)
    if op == "adagrad_update":
        return ("sum",)
    if op in ("nadam_update", "radam_update"):
        return ("exp_avg", "exp_avg_sq")
    raise KeyError(op)


def _sign(attrs) -> float:
    return -1.0 if attrs.get("maximize") else 1.0


def _sgd(a) -> dict:
    return {
        "gsign": _sign(a),
        "wd": a["weight_decay"],
        "mom": a["momentum"],
        "damp1": 1 - a["dampening"],
        "first": 1.0 if a["first"] else 0.0,
        "neg_lr": -a["lr"],
    }


def _adam(a) -> dict:
    b1, b2, step = a["beta1"], a["beta2"], float(a["step"])
    decoupled = a.get("decoupled", False)
    return {
        "gsign": _sign(a),
        "wd": 0.0 if decoupled else a["weight_decay"],  # L2: added to the gradient
        "decay": 1 - a["lr"] * a["weight_decay"] if decoupled else 1.0,  # AdamW: p *= decay
        "w1": 1 - b1,
        "b2": b2,
        "w2": 1 - b2,
        "bc2_sqrt": (1 - b2**step) ** 0.5,
        "eps": a["eps"],
        "neg_step_size": -(a["lr"] / (1 - b1**step)),
    }


def _rmsprop(a) -> dict:
    alpha = a["alpha"]
    return {
        "gsign": _sign(a),
        "wd": a["weight_decay"],
        "alpha": alpha,
        "w": 1 - alpha,
        "eps": a["eps"],
        "mom": a["momentum"],
        "neg_lr": -a["lr"],
    }


def _lion(a) -> dict:
    b1, b2 = a["beta1"], a["beta2"]
    return {
        "gsign": _sign(a),
        "decay": 1 - a["lr"] * a["weight_decay"],
        "b1": b1,
        "w1": 1 - b1,
        "b2": b2,
        "w2": 1 - b2,
        "neg_lr": -a["lr"],
    }


_SCALARS = {
    "sgd_update": _sgd,
    "adam_update": _adam,
    "adamw_update": _adam,
    "rmsprop_update": _rmsprop,
    "lion_update": _lion,
    "adagrad_update": adagrad_scalars,
    "nadam_update": nadam_scalars,
    "radam_update": radam_scalars,
}


def scalars(op: str, attrs: dict) -> dict[str, float]:
    """The kernel's scalar operands, by name, in the order the kernels bind them."""
    if op == "adamw_update":
        attrs = {**attrs, "decoupled": True}
    return _SCALARS[op](attrs)


def _float_dtype(specs) -> None:
    dt = specs[0].dtype
    if not dt.is_float or dt.name == "f16":
        raise DTypeError(f"optimizer buffers are f32 (or f64 on the reference device), got {dt}")
    for s in specs[1:]:
        if s.dtype != dt:
            raise DTypeError(f"optimizer buffers differ in dtype: {dt} vs {s.dtype}")


def grad_count(attrs: dict) -> int:
    """How many gradient tensors an update reads: 1 (the flat gradient buffer), or, the
    multi-tensor form (``grads`` = k), k gradients read where they lie, in parameter
    order, their elements laid end to end over the flat targets."""
    return int(attrs.get("grads", 1))


def is_gated(specs, grads: int = 1) -> bool:
    """Whether an update's tensors (inputs, then targets) carry the gate: a 0-d bool
    right after the gradient(s)."""
    return len(specs) > grads and specs[grads].dtype == bool_ and tuple(specs[grads].shape) == ()


def reads_stats(attrs: dict) -> bool:
    """Whether the input after the gradient(s) is ``grad_stats``' f32 [3] result
    (``ops.fused_step``) instead of a gate: the update then writes nothing where its
    finite flag is 0 and scales each gradient element by its clip factor."""
    return bool(attrs.get("stats"))


def _update_infer(op: str):
    def infer(specs: list[Spec], attrs: dict) -> list[Spec]:
        k = grad_count(attrs)
        grads = specs[:k]
        if reads_stats(attrs) and (len(specs) <= k or tuple(specs[k].shape) != (3,)):
            raise ShapeError(f"{op} with stats reads grad_stats' [3] result after the gradients")
        extra = reads_stats(attrs) or is_gated(specs, k)
        targets = specs[k + 1 :] if extra else specs[k:]
        want = 1 + len(state_names(op, attrs))
        if k < 1 or len(targets) != want:
            raise ShapeError(
                f"{op} takes {k} gradient(s) (and optionally a 0-d bool gate), the parameters "
                f"and {want - 1} state buffers; got {len(specs)} tensors"
            )
        _float_dtype(grads + targets)
        for s in targets:
            if len(s.shape) != 1 or s.shape != targets[0].shape:
                raise ShapeError(
                    f"{op} works on flat buffers of one length, got "
                    f"{[tuple(x.shape) for x in targets]}"
                )
        total = sum(_numel(g.shape) for g in grads)
        if (k == 1 and grads[0].shape != targets[0].shape) or total != targets[0].shape[0]:
            raise ShapeError(
                f"{op}: gradients of {total} elements for {targets[0].shape[0]} parameters"
            )
        return list(targets)

    return infer


def _gather_infer(specs: list[Spec], attrs: dict) -> list[Spec]:
    *ins, out = specs
    # f16 inputs widen into the f32 target as they are copied: a mixed step's gradients
    _float_dtype([out, *(s for s in ins if s.dtype.name != "f16")])
    total = sum(_numel(s.shape) for s in ins)
    if len(out.shape) != 1 or out.shape[0] != total:
        raise ShapeError(f"flat_gather of {total} elements into a target of shape {out.shape}")
    return [out]


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


_ATTRS = {
    "sgd_update": ("lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize", "first"),
    "adam_update": ("lr", "beta1", "beta2", "eps", "weight_decay", "amsgrad", "maximize", "step"),
    "rmsprop_update": ("lr", "alpha", "eps", "weight_decay", "momentum", "centered", "maximize"),
    "lion_update": ("lr", "beta1", "beta2", "weight_decay", "maximize"),
    "adagrad_update": (
        "lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps", "maximize", "step",
    ),
    "nadam_update": (
        "lr", "beta1", "beta2", "eps", "weight_decay", "momentum_decay",
        "decoupled_weight_decay", "maximize", "step",
    ),
    "radam_update": (
        "lr", "beta1", "beta2", "eps", "weight_decay", "decoupled_weight_decay", "maximize",
        "step",
    ),
}  # fmt: skip
_ATTRS["adamw_update"] = _ATTRS["adam_update"]

for _op in UPDATE_OPS:
    register(
        OpDef(
            _op,
            "optim",
            -1,  # the gradient(s), and optionally the gate
            _update_infer(_op),
            attrs=_ATTRS[_op] + ("grads", "stats"),
            doc="fused in-place optimizer step: grad -> params and state (targets)",
            tags=frozenset({"inplace"}),
        )
    )
register(
    OpDef(
        "flat_gather",
        "optim",
        -1,
        _gather_infer,
        doc="copy the inputs, flattened and in order, into one flat target",
        tags=frozenset({"inplace"}),
    )
)
