"""What every hostile input must end in: exit 2, one short line, no traceback, bounded
time and memory, nothing outside the given paths touched, no code run.

``refuse(capsys, argv)`` runs the command line in this process and checks the refusal;
``Sentinel`` is a folder of files whose names, modes and bytes must not change;
``evil_extension(folder)`` writes a module that, when imported, leaves a marker file,
so a test can tell whether any code from an input ran.
"""

from __future__ import annotations

import hashlib
import os
import time
import tracemalloc
from pathlib import Path

from scellis.cli.main import main

SECONDS = 5.0  # generous for a 2-core CI machine; the promise is "a second or two"
MEMORY = 256 << 20  # peak bytes a refusal may allocate (tracemalloc)
LINE = 400  # characters a refusal may print


def refuse(capsys, argv, match: str | None = None, *, seconds: float = SECONDS,
           memory: int | None = MEMORY) -> str:  # fmt: skip
    """Run ``scellis ARGV``; assert exit 2 with one short line and no traceback, within
    ``seconds`` and ``memory`` bytes at peak. The error line."""
    capsys.readouterr()
    if memory is not None:
        tracemalloc.start()
    t0 = time.perf_counter()
    try:
        rc = main([str(a) for a in argv])
    finally:
        took = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1] if memory is not None else 0
        if memory is not None:
            tracemalloc.stop()
    out, err = capsys.readouterr()
    lines = [x for x in err.splitlines() if x.strip()]
    assert rc == 2, f"exit {rc} for {argv[:3]}: {err[-2000:]} {out[-500:]}"
    assert "Traceback" not in err, err[-3000:]
    assert len(lines) == 1, f"{len(lines)} lines: {err[:2000]}"
    assert len(lines[0]) <= LINE, f"{len(lines[0])} characters: {lines[0][:600]}"
    assert took < seconds, f"{took:.1f} s for {argv[:3]}"
    if memory is not None:
        assert peak < memory, f"{peak >> 20} MiB at peak for {argv[:3]}"
    if match is not None:
        import re  # noqa: PLC0415

        assert re.search(match, lines[0]), lines[0]
    return lines[0]


# what the sentinel holds, and the size of its binary file: seven-digit numbers, which no
# run id (a date, a time of day, six hex digits) or common size contains, so that finding
# one in a message means the message read the sentinel
SECRET = 9183746
SECRET_SIZE = 1_048_583


class Sentinel:
    """A folder outside every path a command is given: its state before and after."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "secret.txt").write_text(f"the sentinel's secret: {SECRET} hunter2\n")
        (self.root / "model.safetensors").write_bytes(os.urandom(SECRET_SIZE))
        (self.root / "config.json").write_text(f'{{"secret": {SECRET}}}')
        self.before = self.snapshot()

    def snapshot(self) -> dict:
        out = {}
        for p in sorted(self.root.rglob("*")):
            st = p.lstat()
            data = p.read_bytes() if p.is_file() and not p.is_symlink() else b""
            out[str(p.relative_to(self.root))] = (st.st_mode, hashlib.sha256(data).hexdigest())
        return out

    def unchanged(self) -> None:
        assert self.snapshot() == self.before, "a file outside the given paths changed"

    def secret_leaked(self, text: str) -> bool:
        """Whether ``text`` shows the sentinel's content or a size read from it."""
        return "hunter2" in text or str(SECRET) in text or str(SECRET_SIZE) in text


def evil_extension(folder: Path, name: str = "evil.py") -> Path:
    """A module that leaves ``folder/RAN`` when anything imports it; the marker's path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / "RAN"
    (folder / name).write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('code ran')\n"
    )
    return marker
