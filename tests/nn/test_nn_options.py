"""torch.nn options beyond the defaults (tracked instance-norm statistics, ...): values,
gradients, buffers and state_dict keys against torch CPU on random inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nnutil import arr, compare, rng_for

import scellis.nn as nn


@pytest.mark.parametrize("dims", [1, 2])
def test_instance_norm_tracking_running_stats_matches_torch(dims):
    cls, tcls = (nn.InstanceNorm1d, torch.nn.InstanceNorm1d) if dims == 1 else (
        nn.InstanceNorm2d, torch.nn.InstanceNorm2d)  # fmt: skip
    ours = cls(3, affine=True, track_running_stats=True, momentum=0.3)
    theirs = tcls(3, affine=True, track_running_stats=True, momentum=0.3)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    rng = rng_for(f"instance{dims}")
    shape = (2, 3, 5) if dims == 1 else (2, 3, 4, 5)
    for step in range(2):  # training: the instances' statistics, the buffers move
        x = rng.standard_normal(shape) * 2 + 1
        compare(ours, theirs, [x], f"instance{dims}:{step}")
        for key in ("running_mean", "running_var"):
            np.testing.assert_allclose(arr(getattr(ours, key)), getattr(theirs, key).numpy(),
                                       rtol=1e-5, atol=1e-6)  # fmt: skip
    ours.eval(), theirs.eval()  # eval: the running statistics normalise
    compare(ours, theirs, [rng.standard_normal(shape)], f"instance{dims}:eval")
