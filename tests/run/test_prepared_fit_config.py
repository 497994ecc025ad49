"""A prepared run's FitConfig: the record's training options and the run's own, typed."""

from __future__ import annotations

import random

import pytest

from scellis.base.errors import ScellisError
from scellis.run.prepare import check_record, prepare_run
from scellis.train.stopping import EarlyStopping
from storeutil import write_record


def _prepared(folder, clip: float, patience: int):
    path = write_record(folder, seed=random.randrange(1000))
    text = path.read_text().replace(
        "eval: { every: 1, batch_size: 16 }",
        f"eval: {{ every: 1, batch_size: 16, early_stopping: {{ metric: val_loss, "
        f"patience: {patience} }} }}\ngrad_clip: {{ max_norm: {clip} }}",
    )
    return prepare_run(check_record(text, "tiny.sml"), "reference", base_dir=folder)


def test_the_config_carries_the_record_and_the_run_options(tmp_path):
    clip, patience = round(random.uniform(0.1, 5.0), 3), random.randint(1, 9)
    prep = _prepared(tmp_path, clip, patience)
    c = prep.fit_config(max_steps=4, log_every=2, eval_every=3)
    assert (c.epochs, c.seed, c.determinism_tier) == (3, prep.seed, "debug")
    assert c.grad_clip == {"max_norm": clip}
    assert c.early_stopping == EarlyStopping(metric="val_loss", patience=patience)
    assert (c.max_steps, c.log_every, c.eval_every, c.val_data) == (4, 2, 3, prep.val)
    assert c.plateau_metric == "val_loss" and c.replay is None


def test_a_run_without_validation_gets_no_validation_options(tmp_path):
    prep = _prepared(tmp_path, 1.0, 2)
    prep.record = {**prep.record, "eval": {"every": 1}}  # no early stopping to watch
    c = prep.fit_config(validate=False, eval_every=3)
    assert (c.val_data, c.eval_every, c.plateau_metric) == (None, None, "loss")
    prep.val = None  # what --no-validate leaves
    assert prep.fit_config(eval_every=3).val_data is None


def test_early_stopping_on_validation_without_it_is_refused(tmp_path):
    prep = _prepared(tmp_path, 1.0, 2)
    with pytest.raises(ScellisError, match="early stopping on val_loss needs val_data"):
        prep.fit_config(validate=False)
