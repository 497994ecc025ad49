"""Tensor's op methods are written out in the mixin class bodies, one per table op."""

from __future__ import annotations

import pytest

from scellis.ops.elementwise import BINARY, COMPARE, LOGICAL, UNARY_ANY, UNARY_FLOAT
from scellis.runtime.tensor import Tensor
from scellis.runtime.tensor_math import TensorMath
from scellis.runtime.tensor_nn import TensorNN
from scellis.runtime.tensor_shape import TensorShape

MIXINS = (TensorMath, TensorShape, TensorNN)
TABLE_NAMES = UNARY_FLOAT + UNARY_ANY + ("logical_not",) + BINARY + COMPARE + LOGICAL


def _defined(name: str) -> list[type]:
    return [cls for cls in MIXINS if name in vars(cls)]


@pytest.mark.parametrize("name", TABLE_NAMES)
def test_every_elementwise_op_has_a_method_in_a_class_body(name):
    owners = _defined(name)
    assert owners, f"op {name!r} has no method in {[c.__name__ for c in MIXINS]}"
    assert len(owners) == 1, f"{name!r} is defined in more than one mixin: {owners}"


def test_tensor_inherits_the_mixins_and_keeps_slots():
    assert all(issubclass(Tensor, cls) for cls in MIXINS)
    assert all(vars(cls)["__slots__"] == () for cls in MIXINS)
    # a base without __slots__ would give every tensor a __dict__
    assert not any("__dict__" in vars(cls) for cls in Tensor.__mro__)
    assert Tensor.__hash__ is object.__hash__
