"""The matmul WGSL's bounds guards never use the short-circuit ``&&`` (no device needed).

Each ``&&`` becomes a branch of its own in the compiled shader; SwiftShader (Chromium's
WebGPU on CPU) never finished compiling the t16 variant with scalar reads of both
operands, 64 guards, so the seed LSTM's first step hung in the tab. Every variant the
generator can emit (tile x fetch direction and width of A and B x output width x dtype)
is rendered here and checked for the guard form the tab needs.
"""

from __future__ import annotations

import itertools
import re

import pytest

from scellis.devices.webgpu.kernels.matmul import REGS, TILES, Side, _main, _rmain

SIDES = [Side(along, vec) for along in ("t", "k") for vec in (False, True)]
VARIANTS = list(itertools.product(sorted(TILES), SIDES, SIDES, (False, True), (False, True)))


@pytest.mark.parametrize("tile,a,b,out_vec,half", VARIANTS)
def test_guards_do_not_short_circuit(tile, a, b, out_vec, half):
    code = _main(TILES[tile], a, b, out_vec, half)
    assert "&&" not in code
    guards = re.findall(r"if \((\(.*?\) & \(.*?\))\) \{ [ab]\d+v", code)
    # every operand read is guarded: 4 scalar reads or 1 vec4 read per pass and side,
    # in the fetch before the K loop and the one inside it
    t = TILES[tile]
    passes = t.bk * t.bm // (4 * t.threads)
    want = 2 * sum(passes * (1 if s.vec else 4) for s in (a, b))
    assert len(guards) == want, (len(guards), want)


REG_VARIANTS = list(itertools.product(sorted(REGS), SIDES, SIDES, (False, True), (False, True)))


@pytest.mark.parametrize("tile,a,b,out_vec,half", REG_VARIANTS)
def test_reg_guards_do_not_short_circuit(tile, a, b, out_vec, half):
    code = _rmain(REGS[tile], a, b, out_vec, half, half)
    assert "&&" not in code
    r = REGS[tile]
    # one guarded fetch before the K loop and one inside it, per pass and side
    passes = {s: bt * r.bk // (4 * r.group) for s, bt in (("a", r.bm), ("b", r.bn))}
    want = 2 * sum(passes[n] * (1 if s.vec else 4) for n, s in (("a", a), ("b", b)))
    guards = re.findall(r"if \((\(.*?\) & \(.*?\))\) \{ [ab]\d+v", code)
    assert len(guards) == want, (len(guards), want)
