"""``scellis demo`` (cli layer): fit a small MLP to a noisy sine with the eager engine.

Everything it uses is the public API: tensors, autograd, Philox draws. It prints the
loss as it falls and exits 0 only when the final loss beats the starting loss tenfold.
"""

from __future__ import annotations

import math
import time

import scellis as sc


def _init(shape, fan_in, gen):
    bound = 1.0 / math.sqrt(fan_in)
    return (sc.rand(shape, gen=gen) * (2 * bound) - bound).detach().requires_grad_()


def run(args) -> int:
    sc.set_default_device(args.device)
    gen = sc.generator("init")
    gen.seed = args.seed
    n, hidden = 128, 32
    x = sc.tensor([[-3.0 + 6.0 * i / (n - 1)] for i in range(n)])
    noise = sc.randn((n, 1), gen=sc.generator("augment")) * 0.05
    y = (x.sin() + noise).detach()
    params = [
        _init((1, hidden), 1, gen),
        _init((hidden,), 1, gen),
        _init((hidden, 1), hidden, gen),
        _init((1,), hidden, gen),
    ]
    w1, b1, w2, b2 = params
    lr, beta = 0.05, 0.9
    moms = [p.zeros_like() for p in params]
    t0 = time.perf_counter()
    first = last = None
    print(f"scellis demo: 2-layer tanh MLP fitting sin(x) on {n} points, device={args.device}")
    for step in range(1, args.steps + 1):
        pred = (x @ w1 + b1).tanh() @ w2 + b2
        loss = sc.functional.mse_loss(pred, y)
        loss.backward()
        with sc.no_grad():
            for i, p in enumerate(params):
                moms[i] = moms[i] * beta + p.grad
                p_new = (p - moms[i] * lr).detach().requires_grad_()
                params[i] = p_new
        w1, b1, w2, b2 = params
        if step == 1 or step % 25 == 0 or step == args.steps:
            value = loss.item()
            first = value if first is None else first
            last = value
            print(f"  step {step:4d}  loss {value:.5f}")
    dt = time.perf_counter() - t0
    print(f"done: loss {first:.4f} -> {last:.4f} in {dt:.2f}s ({args.steps / dt:.1f} steps/s)")
    if not last < first / 10:
        print("scellis demo: the loss did not fall tenfold; something is wrong")
        return 1
    return 0
