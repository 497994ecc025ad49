"""Out-of-range integer indices on the reference device: a ShapeError naming the index.

gather, take, tensor indexing and embedding all reach the gather kernel, scatter_add its
own; each must refuse an index outside [0, size) as the project's own error (a
ScellisError, printed by the CLI) naming the bad index and the dim size, never a bare
IndexError from NumPy.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import scellis as sc

F = sc.functional
X = sc.tensor(np.arange(15.0).reshape(3, 5), device="reference")


def _idx(values):
    return sc.tensor(np.array(values, dtype=np.int32), device="reference")


CASES = {
    "gather_high": (lambda: X.gather(_idx([[0, 5, 1]]), 1), 5, 5),
    "gather_negative": (lambda: X.gather(_idx([[0], [-1]]), 0), -1, 3),
    "take": (lambda: X.take(_idx([2, 3]), 0), 3, 3),
    "tensor_index": (lambda: X[:, _idx([4, 7])], 7, 5),
    "embedding": (lambda: F.embedding(_idx([[1, 2], [9, 0]]), X), 9, 3),
    "scatter_add": (lambda: X.scatter_add(_idx([[0, 1, 4, 1, 0]] * 3), 1, (3, 4)), 4, 4),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_out_of_range_index_is_a_shape_error(name):
    fn, bad, size = CASES[name]
    with pytest.raises(sc.ShapeError) as err:
        fn()
    assert isinstance(err.value, sc.ScellisError)
    msg = str(err.value)
    assert re.search(rf"index {bad}\b", msg) and f"size {size}" in msg, msg


def test_in_range_indices_still_work():
    assert X.gather(_idx([[4, 0]]), 1).tolist() == [[4.0, 0.0]]
    assert F.embedding(_idx([2, 0]), X).tolist() == [X[2].tolist(), X[0].tolist()]
    assert X.gather(_idx(np.zeros((0, 5))), 0).shape == (0, 5)
