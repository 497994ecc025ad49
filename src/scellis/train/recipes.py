"""Two worked training runs (train layer) on the bundled data, usable from Python and CLI.

``forecast`` fits the LSTM forecaster to yearly sunspot numbers and compares its
validation MAE with the persistence forecast (repeat the last value); ``char_lm``
fits the char Transformer to a text and compares its validation loss with the
text's unigram entropy. Both return plain dicts of what they measured.
"""

from __future__ import annotations

import time
from pathlib import Path

from ..base.rng import Generator
from ..catalog.losses import CrossEntropyLoss, MSELoss
from ..catalog.optim import Adam, AdamW
from ..data.series import read_csv_column, window_series
from ..data.text import CharVocab, char_windows, unigram_entropy
from ..devices.base import get_device
from ..model.zoo import CharTransformer, LSTMForecaster
from ..runtime.creation import tensor
from .data import Batches
from .fit import run


def _bundled() -> Path:
    """The data shipped inside the package (so a wheel, and the browser, carry it)."""
    return Path(__file__).resolve().parents[1] / "data" / "bundled"


def _mae(model, x, y, w) -> tuple[float, float]:
    """(model MAE, persistence MAE) in the series' units over windows x -> y."""
    pred = model(x).tolist()
    err = sum(abs(w.denormalise(p[0]) - w.denormalise(t[0])) for p, t in zip(pred, y))
    last = sum(abs(w.denormalise(xi[-1][0]) - w.denormalise(t[0])) for xi, t in zip(x.tolist(), y))
    return err / len(y), last / len(y)


def forecast(
    device="reference",
    epochs=60,
    hidden=32,
    window=20,
    seed=0,
    tier="debug",
    on_event=None,
    csv_path=None,
) -> dict:
    dev = get_device(device)
    values = read_csv_column(csv_path or _bundled() / "sunspots_yearly.csv", "sunspots")
    w = window_series(values, window)
    model = LSTMForecaster(1, hidden, 1, 1, device=dev, gen=_gen(seed))
    opt = Adam(model, lr=0.01)
    t0 = time.perf_counter()
    summary = run(
        model,
        MSELoss(),
        opt,
        Batches(w.x_train, w.y_train, 32, device=dev),
        epochs=epochs,
        determinism_tier=tier,
        seed=seed,
        val_data=Batches(w.x_val, w.y_val, 64, shuffle=False, device=dev),
        log_every=50,
        on_event=on_event,
    )
    x_val = tensor(w.x_val, device=dev)
    model.eval()
    mae, persistence = _mae(model, x_val, w.y_val, w)
    return {
        "model": "lstm_forecaster",
        "device": dev.name,
        "steps": summary["steps"],
        "seconds": time.perf_counter() - t0,
        "val_mae": mae,
        "persistence_mae": persistence,
        "val_loss": summary.get("val_loss"),
        "dataset_sha256": w.digest,
    }


def char_lm(
    device="reference",
    steps=300,
    d_model=64,
    heads=4,
    layers=2,
    context=32,
    batch=16,
    seed=0,
    tier="debug",
    on_event=None,
    text_path=None,
    max_chars=60000,
) -> dict:
    dev = get_device(device)
    text = Path(text_path or _bundled() / "python_help_topics.txt").read_text()[:max_chars]
    vocab = CharVocab(text)
    ids = vocab.encode(text)
    cut = int(len(ids) * 0.9)
    xt, yt = char_windows(ids[:cut], context, stride=context // 2)
    xv, yv = char_windows(ids[cut:], context)
    model = CharTransformer(len(vocab), d_model, heads, layers, context, device=dev, gen=_gen(seed))
    opt = AdamW(model, lr=3e-3, weight_decay=0.01)
    t0 = time.perf_counter()
    summary = run(
        model,
        CrossEntropyLoss(),
        opt,
        Batches(xt, yt, batch, device=dev),
        epochs=10**6,
        max_steps=steps,
        determinism_tier=tier,
        seed=seed,
        val_data=Batches(xv[:64], yv[:64], 32, shuffle=False, device=dev),
        eval_every=steps,
        log_every=50,
        on_event=on_event,
    )
    return {
        "model": "char_transformer",
        "device": dev.name,
        "steps": summary["steps"],
        "seconds": time.perf_counter() - t0,
        "val_loss": summary.get("val_loss"),
        "unigram_entropy": unigram_entropy(ids[cut:]),
        "vocab": len(vocab),
    }


def _gen(seed: int) -> Generator:
    return Generator(seed, "init")
