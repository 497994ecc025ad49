"""The run panel's entry points (webapp layer): a forwarder of the run session's events.

``train`` and ``resume`` build a ``run.session.RunSession`` (the CLI's own) with the
options the page sent (``run.options.RunOptions``, the tab's defaults) and forward its
events as plain dicts (``train.events``). ``options`` lists the run options the panel
shows; ``control`` is called by the worker as soon as a message arrives, and the
session reads it at every event, so pause and stop act at the next step boundary.
``generate`` continues a prompt with a stored run's language model, token by token.
"""

from __future__ import annotations

import base64
import json
import tempfile
from pathlib import Path

from ..base.errors import ScellisError
from ..devices.base import get_device
from ..ir.plan import PlanRefused
from ..run.generate import text_run
from ..run.options import TAB, RunOptions
from ..run.prepare import check_record
from ..run.reference import open_run
from ..run.session import RunControl, RunSession, plan_event, resume_run, start_run
from ..store import bundle
from ..store.objects import ObjectStore
from ..store.query import RunQuery
from ..store.records import Records
from ..train import events as E
from . import tab_store
from .budget import tab_budget
from .commands import command

# the session the page's Pause and Stop act on (one run at a time in a tab)
_control = RunControl()
# the generation the page's Stop of the generation box ends (at the next token)
_generation = {"stop": False}
MAX_NEW_CAP = 2000  # tokens one generation may ask for: each is one forward pass


@command(writes_store=False)
def control(message) -> dict:
    """Apply a control message (a dict or its JSON): {"pause": bool}, {"stop": true} (the
    run), {"stop_generation": true} (the generation in progress)."""
    msg = json.loads(message) if isinstance(message, str) else dict(message)
    if msg.get("stop_generation"):
        _generation["stop"] = True
    if "pause" in msg:
        _control.pause(bool(msg["pause"]))
    if msg.get("stop"):
        _control.stop("stop")
    return {"paused": _control.paused, "stop": _control.stopping}


@command(writes_store=False)
def event_schema() -> dict:
    """The JSON schema of every event kind the page may receive."""
    return E.schema()


@command(writes_store=False)
def plan(record_text: str, device: str = "webgpu", replay: bool = True,
         validate: bool = True, budget: str | None = None) -> dict:  # fmt: skip
    """The memory plan of ``record_text``'s training step on ``device``'s limits,
    before anything runs (the ir layer's planner, tracing on the null device), with
    the run's ``replay`` and ``validate`` options as the run would take them, under the
    tab's ``budget`` (``webapp.budget``; blank: the declared one)."""
    return plan_event(check_record(record_text), device, replay=replay,
                      validate=validate, budget=tab_budget(budget)).to_dict()  # fmt: skip


@command(writes_store=False)
async def check_kernel(code: str, device: str = "webgpu") -> dict:
    """Compile one WGSL compute shader (entry ``main``) on ``device`` and wait for the
    verdict: {"ok": true} or DeviceError with the compiler's message and the source.
    For authors of custom kernels; the browser reports shader errors asynchronously,
    so this waits on a readback, where they surface."""
    backend = get_device(device)
    gpu = getattr(backend, "gpu", None)
    if gpu is None:
        raise ScellisError(f"device {device!r} runs no WGSL")
    gpu.create_pipeline(code)
    probe = gpu.create_buffer(4, data=b"\x01\x02\x03\x04")
    try:
        await gpu.read_buffer(probe, 0, 4)
    finally:
        gpu.destroy_buffer(probe)
    return {"ok": True}


def _fresh_control() -> RunControl:
    global _control
    _control = RunControl()
    return _control


@command(writes_store=True)
async def train(record_text: str, device: str = "webgpu", tier: str | None = None,
                store: str | None = None, budget: str | None = None, **opts):  # fmt: skip
    """Train ``record_text`` in this process, yielding events. ``opts`` are run options
    (``options()``; the tab's defaults for the rest); ``tier`` replaces the record's
    determinism tier; ``budget`` is the tab's memory budget (as ``plan`` takes it).
    With ``store`` (a folder: the worker's persistent one is ``tab_store.ROOT``) the
    run is recorded there exactly like ``scellis train``."""
    o = RunOptions.from_mapping(opts, surface=TAB, where="train")
    raw = record_text.encode("utf-8")
    held = tab_budget(budget)
    try:
        session = start_run(raw, "record.sml", options=o, device=device, store=store,
                            budget=held, tier=tier, argv=["(tab)"],
                            control=_fresh_control())  # fmt: skip
    except PlanRefused as e:
        yield E.Plan(**e.plan.record()).to_dict()  # the page shows the verdict it refused
        raise
    async for ev in _forward(session):
        yield ev


@command(writes_store=True)
async def resume(run: str, store: str = tab_store.ROOT, device: str = "webgpu",
                 step: int | None = None, budget: str | None = None, **opts):  # fmt: skip
    """Continue run ``run`` of ``store`` from its latest checkpoint that loads (or the
    one at ``step``), as ``scellis resume`` does, with its stored options (``opts``
    replace some: ``samples``...), under the tab's ``budget``; the stored curves come
    first (``history``)."""
    given = {k: v for k, v in opts.items() if v is not None}
    RunOptions.from_mapping(given, surface=TAB, where="resume")  # one clear message
    held = tab_budget(budget)
    scratch = Path(tempfile.gettempdir()) / "scellis-run-files" / str(run)
    try:
        session = resume_run(store, run, overrides=given, device=device, step=step,
                             is_live=lambda row: tab_store.status_of(row) == "running",
                             scratch=scratch, history=True, control=_fresh_control(),
                             surface="resume", budget=held)  # fmt: skip
    except PlanRefused as e:
        yield E.Plan(**e.plan.record()).to_dict()  # as train's: the page shows the verdict
        raise
    async for ev in _forward(session):
        yield ev


async def _forward(session: RunSession):
    with tab_store.live(session.rid):
        async for ev in session.events():
            yield ev.to_dict()


@command(writes_store=False)
def store_taken() -> dict:
    """Said by the worker once it has taken the store over from another window."""
    tab_store.opened()
    return {"ok": True}


@command(writes_store=False)
def runs(store: str = tab_store.ROOT, dataset: str | None = None, record: str | None = None,
         model: str | None = None, where: str | None = None) -> list[dict]:  # fmt: skip
    """The runs of the tab's store with their status (``interrupted`` for a dead tab's);
    the filters are ``scellis runs``' (``store.query``): blank ones are left out."""
    given = [x.strip() if isinstance(x, str) and x.strip() else None
             for x in (dataset, record, model, where)]  # fmt: skip
    query = RunQuery(*given) if any(given) else None
    return tab_store.list_runs(store, query)


@command(writes_store=False)
def export_run(run: str, store: str = tab_store.ROOT) -> str:
    """Run ``run``'s bundle (``store.bundle``), base64-encoded for the trip to the page."""
    objects, records = ObjectStore(store), Records(store)
    try:
        return base64.b64encode(bundle.export_run(objects, records, records.resolve(run))).decode()
    finally:
        records.close()


@command(writes_store=True)
def import_run(data: str, store: str = tab_store.ROOT) -> str:
    """Add a bundle (base64 of its bytes) to the tab's store; returns the run id."""
    try:
        raw = base64.b64decode(data, validate=True)
    except (ValueError, TypeError):
        raise ScellisError("import_run: the bundle is not base64 text") from None
    objects, records = ObjectStore(store), Records(store)
    try:
        return bundle.import_run(objects, records, raw)
    finally:
        records.close()


@command(writes_store=False)
async def generate(run: str, prompt: str, store: str = tab_store.ROOT, device: str = "webgpu",
                   max_new: int = 200, temperature: float = 1.0, top_k: int | None = None,
                   top_p: float | None = None, seed: int = 0):  # fmt: skip
    """Continue ``prompt`` with the language model of ``run`` (a run reference in the
    tab's store) by the CLI's generator (``run.generate``): {"kind": "token", "id",
    "text"} per generated token, then {"kind": "generated", "run", "prompt",
    "generated", "ids", "stopped"}. ``control({"stop_generation": true})`` ends it
    before the next token (``stopped``); ``max_new`` is at most ``MAX_NEW_CAP``."""
    if isinstance(max_new, int) and max_new > MAX_NEW_CAP:
        raise ScellisError(f"max_new {max_new} is over the tab's cap of {MAX_NEW_CAP} tokens")
    _generation["stop"] = False
    lm = text_run(open_run(store, run), device)
    lm.encode(prompt)
    ids: list[int] = []
    kw = dict(max_new=max_new, temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
    pieces = lm.pieces(prompt, **kw)
    try:
        async for i, piece in pieces:
            ids.append(i)
            yield {"kind": "token", "id": i, "text": piece}
            if _generation["stop"]:
                break
    finally:
        await pieces.aclose()  # the model leaves eval mode as it entered it
    yield {"kind": "generated", "run": lm.run.ref, "prompt": prompt,
           "generated": lm.decoded(prompt, ids), "ids": ids,
           "stopped": _generation["stop"]}  # fmt: skip
