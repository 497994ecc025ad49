"""FitConfig: the typed options of one fit call, checked in one place; fit_loop runs it."""

import asyncio
import random

import pytest
from trainutil import task, weights

from scellis.base.errors import ScellisError
from scellis.train import EarlyStopping, FitConfig, fit, fit_loop
from scellis.train.augment import Augment


def _drive(events) -> list[dict]:
    async def main():
        return [e async for e in events]

    return asyncio.run(main())


def _comparable(events) -> list[tuple]:
    # timings differ between two runs; everything else must not
    return [(e["kind"], e.get("step"), e.get("loss"), e.get("val_loss")) for e in events]


def test_fit_loop_with_a_config_is_fit_with_keywords():
    seed = random.randrange(1000)
    opts = dict(epochs=2, determinism_tier="debug", log_every=4, eval_every=5, max_steps=11)
    model, loss, opt, data, val = task("reference", seed=seed)
    by_keywords = _drive(fit(model, loss, opt, data, val_data=val, **opts))
    w_keywords = weights(model)
    model, loss, opt, data, val = task("reference", seed=seed)
    config = FitConfig(val_data=val, **opts)
    by_config = _drive(fit_loop(model, loss, opt, data, config))
    assert _comparable(by_config) == _comparable(by_keywords)
    assert weights(model) == w_keywords
    assert by_config[-1]["steps"] == 11


def test_options_take_their_working_form():
    val = object()
    c = FitConfig(epochs=1, val_data=val, early_stopping={"patience": 3}, augment={"noise": 0.1})
    assert c.early_stopping == EarlyStopping(patience=3)
    assert c.augment == Augment(noise=0.1)
    assert c.plateau_metric == "val_loss"
    plain = FitConfig(epochs=1, augment={"noise": 0.0})
    assert plain.plateau_metric == "loss" and plain.augment is None
    with pytest.raises(AttributeError):
        c.epochs = 2  # frozen


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(log_every=0), "log_every and eval_every must be >= 1"),
        (dict(eval_every=0, val_data=object()), "log_every and eval_every must be >= 1"),
        (dict(eval_every=3), "eval_every needs val_data"),
        (dict(early_stopping={"metric": "val_mae"}), "early stopping on val_mae needs val_data"),
        (dict(early_stopping={"patience": -1}), "patience >= 0"),
        (dict(augment={"blur": 1}), "unknown key 'blur'"),
    ],
)
def test_bad_options_are_refused_with_one_message(options, message):
    with pytest.raises(ScellisError, match=message):
        FitConfig(epochs=1, **options)
    model, loss, opt, data, _ = task("reference")
    with pytest.raises(ScellisError, match=message):  # fit says the same, on first iteration
        _drive(fit(model, loss, opt, data, epochs=1, determinism_tier="debug", **options))
