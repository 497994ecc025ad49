"""A one-line terminal progress bar (cli layer): step, loss, LR, steps/s and ETA."""

from __future__ import annotations

import shutil
import sys
import time


class Progress:
    def __init__(self, total: int | None, stream=None):
        self.total = total
        self.stream = stream or sys.stdout
        self.t0 = time.perf_counter()
        self.first_step: int | None = None
        self.width = 0

    def update(self, ev: dict) -> None:
        step = ev["step"]
        if self.first_step is None:
            self.first_step, self.t0 = step - 1, time.perf_counter()
        done = step - self.first_step
        rate = done / max(time.perf_counter() - self.t0, 1e-9)
        loss = "  -   " if ev.get("loss") is None else f"{ev['loss']:.4f}"
        eta = ""
        if self.total:
            left = max(self.total - step, 0)
            eta = f"  ETA {_clock(left / rate) if rate > 0 else '?'}"
            frac = min(step / self.total, 1.0)
            cols = max(10, min(30, shutil.get_terminal_size((80, 20)).columns - 70))
            fill = int(frac * cols)
            head = f"[{'#' * fill}{'.' * (cols - fill)}] {step}/{self.total}"
        else:
            head = f"step {step}"
        line = f"{head}  loss {loss}  lr {ev['lr']:.3g}  {rate:.1f} steps/s{eta}"
        self.stream.write("\r" + line.ljust(self.width))
        self.stream.flush()
        self.width = len(line)

    def clear(self) -> None:
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0

    def finish(self) -> None:
        if self.width:
            self.stream.write("\n")
            self.stream.flush()
            self.width = 0


def _clock(s: float) -> str:
    s = int(s)
    return (
        f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"
    )
