"""Whether a forecaster beats the naive forecasts (run layer): the verdict beside its numbers.

From the model's validation MAE and the baselines' (``baselines.py``, same windows,
same units): the ratio of the model's MAE to each baseline's (below 1 beats it), the
MASE against each (the MAE over that baseline's own one-step error on the training
rows, Hyndman and Koehler's scale: below 1 is better than the baseline was in
sample), and one sentence. When the model does not beat a baseline, the sentence names
the likely cause and the change to make in the record.
"""

from __future__ import annotations

GLOBAL_MODES = ("standard", "zscore", "minmax", "none", None)
NAMES = {"persistence": "persistence", "seasonal_naive": "seasonal naive"}


def verdict(metrics: dict | None, baselines: dict | None) -> dict | None:
    """``{beats: {baseline: bool}, mae_ratio: {...}, mase: {...}, text}``, or None when
    the model's or persistence's MAE is unknown (a record without ``mae``)."""
    mae = (metrics or {}).get("mae")
    base = {k: v for k, v in (baselines or {}).items() if k in NAMES and v.get("mae") is not None}
    if mae is None or "persistence" not in base:
        return None
    ratio = {k: mae / v["mae"] if v["mae"] > 0 else None for k, v in base.items()}
    mase = {k: mae / v["in_sample_mae"] if v.get("in_sample_mae") else None
            for k, v in base.items()}  # fmt: skip
    beats = {k: mae < v["mae"] for k, v in base.items()}
    won = [_versus(k, ratio[k], mase[k], base[k]) for k in base if beats[k]]
    lost = [_versus(k, ratio[k], mase[k], base[k]) for k in base if not beats[k]]
    text = "; ".join(
        [f"does not beat {' or '.join(lost)}"] * bool(lost)
        + [f"beats {' and '.join(won)}"] * bool(won)
    )
    fix = advice(beats, base)
    return {"beats": beats, "mae_ratio": ratio, "mase": mase,
            "text": text + (f". {fix}" if fix else "")}  # fmt: skip


def _versus(name: str, ratio, mase, base: dict) -> str:
    """``seasonal naive (MAE 0.71x, MASE 0.64, season 12)``."""
    how = [f"MAE {ratio:.2f}x" if ratio is not None else "its MAE is 0"]
    if mase is not None:  # another file is all validation: no in-sample scale
        how.append(f"MASE {mase:.2f}")
    if base.get("season"):
        how.append(f"season {base['season']}")
    return f"{NAMES[name]} ({', '.join(how)})"


def advice(beats: dict, base: dict) -> str:
    """The likely cause of a lost comparison and the fix ('' when nothing is lost)."""
    if all(beats.values()):
        return ""
    p = base["persistence"]
    mode, window = p.get("normalise"), p.get("window")
    outside = p.get("val_outside_train") or 0.0
    if outside >= 0.1 and mode in GLOBAL_MODES:
        return (f"{outside:.0%} of the validation values lie outside the training range, "
                "which one global scale cannot reach: try normalise: change")  # fmt: skip
    if not beats["persistence"]:
        if mode in GLOBAL_MODES or mode == "window":
            return ("the model adds nothing to the last value: try normalise: change "
                    "(persistence is then its zero), or train longer")  # fmt: skip
        return "the model adds nothing to the last value yet: train longer (epochs)"
    season = base["seasonal_naive"].get("season")
    if season and window and window < season:
        return (f"the window ({window} rows) is shorter than the season ({season}): make "
                f"data.window at least {season}, two seasons ({2 * season}) is better")  # fmt: skip
    if season and window and window < 2 * season:
        return f"the season is not learned yet: try a window of two seasons ({2 * season})"
    return "the season is not learned yet: train longer (epochs) or widen the model"
