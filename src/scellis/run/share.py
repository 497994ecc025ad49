"""A run as a link (run layer): ``scellis share RUN``, ``scellis reproduce LINK`` and the
tab's "copy link" and opened links all read and write this.

A link is the tab's address with ``#repro=PAYLOAD`` after it. The payload is what
reproducing the run needs and what it should give: the record's text (as the run
trained it), the dataset's hash, the seed, the determinism tier, the run options that
change the numbers, and the losses of the first steps. It is compact JSON, raw-deflated
and base64url-encoded (a browser inflates it with ``DecompressionStream("deflate-raw")``,
Python with ``zlib``), and bounded both ways: a link longer than ``MAX_FRAGMENT`` is
refused when made, and one read back is inflated to at most ``MAX_JSON`` bytes and
checked field by field, since a link is input from anyone. The data file itself never
travels in a link (a bundled one is named by the record); the opener supplies it and
its hash must match.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import urllib.parse
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from ..base.errors import ScellisError, shown
from ..store.objects import ObjectStore
from ..store.records import Records

VERSION = 1
KEY = "repro"  # the fragment's key: #repro=PAYLOAD
DEFAULT_SITE = "http://127.0.0.1:8000/"  # where `scellis serve` serves the tab
DEFAULT_STEPS = 16  # losses a link carries, from the first step
MAX_STEPS = 64
MAX_FRAGMENT = 16_384  # characters: links this long still survive mail and chat
MAX_JSON = 256 * 1024  # inflated payload: a hostile link cannot make it bigger
TIERS = ("debug", "prod", "fast")
# the run options that change what a step computes (the rest say when to checkpoint
# or what to print); a link never carries `extensions`: opening a link runs no code
NUMERIC_OPTIONS = ("log_every", "drop_last", "validate", "eval_every", "val_rows")
_HASH = re.compile(r"[0-9a-f]{64}")


@dataclass
class Shared:
    """What a link carries (see the module note); ``losses`` are ``(step, loss)``."""

    record: str
    dataset: str | None
    seed: int | None
    tier: str | None
    losses: list[tuple[int, float]]
    options: dict = field(default_factory=dict)
    run: str | None = None  # the run it was made from, for the reader's information
    device: str | None = None  # the device it ran on: bit for bit holds on the same one

    def payload(self) -> dict:
        return {"v": VERSION, "record": self.record, "dataset": self.dataset, "seed": self.seed,
                "tier": self.tier, "losses": [[s, v] for s, v in self.losses],
                "options": self.options, "run": self.run, "device": self.device}  # fmt: skip

    @property
    def steps(self) -> int:
        """The steps a reproduction trains: up to the last expected loss."""
        return max((s for s, _ in self.losses), default=0)


def shared_of(store, ref: str, steps: int = DEFAULT_STEPS) -> Shared:
    """Run ``ref`` of ``store`` as a link's content, with its first ``steps`` losses."""
    if not 1 <= steps <= MAX_STEPS:
        raise ScellisError(f"a link carries 1 to {MAX_STEPS} losses, not {steps}")
    rec = Records(store, readonly=True)
    try:
        run = rec.run(rec.resolve(ref))
        losses = [(s, v) for s, v in rec.metrics(run["id"], "loss") if v is not None]
    finally:
        rec.close()
    if not losses:
        raise ScellisError(f"run {run['id']} recorded no loss yet: there is nothing to reproduce")
    text = ObjectStore(Path(store)).get(run["record_hash"]).decode("utf-8", "replace")
    stored = (run["config"] or {}).get("options") or {}
    if stored.get("extensions"):
        named = ", ".join(map(str, stored["extensions"]))
        raise ScellisError(
            f"run {run['id']} loaded user extensions ({named}); "
            "a link runs no code, so it cannot reproduce this run (share its bundle: "
            "scellis runs export)"
        )
    options = {k: stored[k] for k in NUMERIC_OPTIONS if k in stored}
    return Shared(text, run["dataset_hash"], run["seed"], run["tier"], losses[:steps], options,
                  run["id"], run["device"])  # fmt: skip


def encode(shared: Shared) -> str:
    """The payload as the fragment's value: JSON, raw deflate, base64url, no padding."""
    text = json.dumps(shared.payload(), separators=(",", ":"), ensure_ascii=False)
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    packed = packer.compress(text.encode("utf-8")) + packer.flush()
    return base64.urlsafe_b64encode(packed).decode("ascii").rstrip("=")


def link_of(shared: Shared, site: str = DEFAULT_SITE) -> str:
    """The link: ``site`` (the tab's address) with the payload in its fragment."""
    parts = urllib.parse.urlsplit(site)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.fragment:
        raise ScellisError(f"--site {shown(site, 80)!r} is not the tab's address "
                           "(http:// or https://, no #fragment)")  # fmt: skip
    fragment = f"{KEY}={encode(shared)}"
    if len(fragment) > MAX_FRAGMENT:
        raise ScellisError(
            f"the link would be {len(fragment)} characters (at most {MAX_FRAGMENT}): the record "
            "is too long for a link; share the run's bundle instead (scellis runs export)"
        )
    path = parts.path or "/"
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, parts.query, fragment))


def read_link(link: str) -> Shared:
    """A link (or its ``#repro=...`` fragment alone) back as a ``Shared``; a
    ScellisError saying what is wrong with anything else."""
    if not isinstance(link, str):
        raise ScellisError("a link is text")
    fragment = link.split("#", 1)[1] if "#" in link else link
    if not fragment.startswith(KEY + "="):
        raise ScellisError(f"{shown(link, 80)!r} is not a Scellis run link (no #{KEY}=...)")
    data = fragment[len(KEY) + 1 :]
    if len(data) > MAX_FRAGMENT or not re.fullmatch(r"[A-Za-z0-9_-]+", data):
        raise ScellisError(f"the link's payload is damaged or longer than {MAX_FRAGMENT} "
                           "characters")  # fmt: skip
    try:
        packed = base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))
        unpacker = zlib.decompressobj(-15)
        text = unpacker.decompress(packed, MAX_JSON)
        if unpacker.unconsumed_tail or not unpacker.eof:
            raise ScellisError(f"the link's payload is cut short or inflates past {MAX_JSON} "
                               "bytes")  # fmt: skip
        payload = json.loads(text.decode("utf-8"))
    except (binascii.Error, zlib.error, UnicodeDecodeError, ValueError, RecursionError):
        raise ScellisError("the link's payload is damaged (not a Scellis run link)") from None
    return _checked(payload)


def _checked(p) -> Shared:
    """The payload's fields, each of the type and size a link may carry."""

    def bad(what: str):
        raise ScellisError(f"the link's {what}")

    if not isinstance(p, dict) or p.get("v") != VERSION:
        bad(f"version is not {VERSION} (made by another scellis?)")
    if not isinstance(p.get("record"), str) or not p["record"].strip():
        bad("record is missing")
    ds = p.get("dataset")
    if ds is not None and not (isinstance(ds, str) and _HASH.fullmatch(ds)):
        bad("dataset hash is not a sha256")
    seed = p.get("seed")
    if seed is not None and (type(seed) is not int or not 0 <= seed < 2**64):
        bad("seed is not a whole number from 0")
    if p.get("tier") is not None and p["tier"] not in TIERS:
        bad(f"tier is not one of {', '.join(TIERS)}")
    losses = p.get("losses")
    ok = isinstance(losses, list) and 0 < len(losses) <= MAX_STEPS and all(
        isinstance(x, list) and len(x) == 2 and type(x[0]) is int and 0 < x[0] < 2**31
        and type(x[1]) in (int, float) and math.isfinite(x[1]) for x in losses
    )  # fmt: skip
    if not ok or [s for s, _ in losses] != sorted({s for s, _ in losses}):
        bad(f"losses are not 1 to {MAX_STEPS} (step, loss) pairs in step order")
    options = p.get("options") or {}
    if not isinstance(options, dict) or any(k not in NUMERIC_OPTIONS for k in options):
        bad(f"options name something other than {', '.join(NUMERIC_OPTIONS)}")
    run = p.get("run")
    if run is not None and not (isinstance(run, str) and re.fullmatch(r"[\w.-]{1,64}", run)):
        bad("run id is not one")
    device = p.get("device")
    if device is not None and not (
        isinstance(device, str) and re.fullmatch(r"[\w.-]{1,40}", device)
    ):
        bad("device is not a device name")
    return Shared(p["record"], ds, seed, p.get("tier"),
                  [(s, float(v)) for s, v in losses], options, run, device)  # fmt: skip


def match_of(expected: list[tuple[int, float]], got: dict[int, float]) -> dict:
    """How a reproduction's losses (``{step: loss}``) compare with a link's: ``bitwise``
    when every expected step has exactly the same value; else the first step that
    differs (or is missing) and the largest relative difference seen."""
    first, worst = None, 0.0
    for step, want in expected:
        have = got.get(step)
        if have is None or have != want:
            first = step if first is None else first
        if have is not None and math.isfinite(have):
            worst = max(worst, abs(have - want) / max(abs(want), 1e-30))
    return {"bitwise": first is None, "first_difference": first, "steps": len(expected),
            "max_relative_difference": worst}  # fmt: skip


def share(run: str, *, store=".scellis", steps: int = DEFAULT_STEPS,
          site: str = DEFAULT_SITE) -> str:  # fmt: skip
    """The link that reproduces stored run ``run`` (``scellis share RUN``)."""
    return link_of(shared_of(store, run, steps), site)
