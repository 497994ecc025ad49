"""Every reader of a user's file, fuzzed: random bytes and mutations of valid files.

For any input the result is success or one ScellisError (never another exception), a
case allocates less than ``harness.MEMORY`` and takes less than ``harness.TIME_S``. The
valid files are real: torch.save, the safetensors package, torch.onnx.export, a run
trained and exported here, the example records. Budgets are fixed and the generation is
derandomized, so every run tries the same cases (the session prints how many).
"""

from __future__ import annotations

import io
import itertools
import json
import tarfile
import zipfile
from pathlib import Path

import pytest
from harness import budget, checked, inputs, mutations
from hypothesis import given
from hypothesis import strategies as st

from scellis.catalog.sml_registry import catalog_registry
from scellis.cli.main import main
from scellis.codecs import make
from scellis.codecs.torch.safezip import SafeZip
from scellis.sml import parse, validate
from scellis.store.bundle import import_run
from scellis.store.objects import ObjectStore
from scellis.store.records import Records
from scellis.store.safetensors import loads

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
CAP = 16 << 20  # the readers' size caps here: a case may not ask for gigabytes legally
_n = itertools.count()


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, bytes]:
    d = tmp_path_factory.mktemp("seeds")
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 2)
    torch.save({"sd": lin.state_dict(), "w": torch.randn(4, 3).t(), "epoch": 3,
                "names": ["a", "b"]}, d / "m.pt")  # fmt: skip
    from safetensors.torch import save_file

    save_file({"w": torch.randn(2, 3), "i": torch.arange(4)}, d / "m.safetensors",
              metadata={"k": "v"})  # fmt: skip
    from onnx_models import MLP, export

    export(MLP(), torch.randn(2, 3), d / "m.onnx")

    class SelfAttention(torch.nn.Module):  # no catalog form as a whole: onnx/op blocks
        def __init__(self):
            super().__init__()
            self.mha = torch.nn.MultiheadAttention(4, 2, batch_first=True)

        def forward(self, x):
            return self.mha(x, x, x, need_weights=False)[0]

    export(SelfAttention(), torch.randn(2, 3, 4), d / "mha.onnx")
    from storeutil import write_record

    rec, store = write_record(d), d / "s"
    assert main(["train", str(rec), "--store", str(store), "--device", "reference",
                 "--max-steps", "2", "--checkpoint-every", "1"]) == 0  # fmt: skip
    assert main(["runs", "export", "last", "--store", str(store), "-o", str(d / "b.tar")]) == 0
    names = ("m.pt", "m.safetensors", "m.onnx", "mha.onnx", "b.tar")
    out = {n: (d / n).read_bytes() for n in names}
    with zipfile.ZipFile(io.BytesIO(out["m.pt"])) as z:
        out["data.pkl"] = z.read("m/data.pkl")
        out["storages"] = {n.rsplit("/", 1)[1]: z.read(n) for n in z.namelist() if "/data/" in n}
    return out


def _case_dir(tmp_path_factory, name: str) -> Path:
    d = tmp_path_factory.getbasetemp() / f"fuzz-{name}-{next(_n)}"
    d.mkdir()
    return d


def test_pickle_reader(files, tmp_path_factory):
    from ptfiles import archive

    codec = make("codec/torch", max_bytes=CAP)
    folder = _case_dir(tmp_path_factory, "pkl")

    @budget(300)
    @given(inputs(files["data.pkl"], random_size=512))
    def case(pkl):
        p = folder / "f.pt"
        p.write_bytes(archive(pkl, files["storages"]))
        checked("pickle", codec.read, p)

    case()


_G = [b"ctorch._utils\n_rebuild_tensor_v2\n", b"ctorch._utils\n_rebuild_parameter\n",
      b"ctorch._utils\n_rebuild_parameter_with_state\n", b"ccollections\nOrderedDict\n",
      b"ctorch\nFloatStorage\n", b"ctorch\nLongStorage\n", b"ctorch\nUntypedStorage\n",
      b"cos\nsystem\n", b"cbuiltins\ngetattr\n"]  # fmt: skip
_LEAVES = [b"N", b"\x88", b"\x89", b"K\x00", b"K\x03", b"J\xff\xff\xff\xff",
           b"\x8a\x08" + (1 << 62).to_bytes(8, "little"), b"\x8a\x01\x80",
           b"X\x01\x00\x00\x00w", b"X\x07\x00\x00\x00storage", b"X\x01\x00\x00\x000",
           b"X\x03\x00\x00\x00cpu", b"G?\xf0\x00\x00\x00\x00\x00\x00", b"C\x01x"]  # fmt: skip
_OPS = [b"(", b"t", b")", b"\x85", b"\x86", b"\x87", b"}", b"]", b"s", b"u", b"a", b"e",
        b"R", b"b", b"Q", b"\x81", b"0", b"2", b"q\x00", b"q\x01", b"h\x00", b"h\x01",
        b"\x94", b"\x82\x01", b"l", b"d"]  # fmt: skip


def _opcode_runs():
    """Pickles spelled from torch's own opcodes, allowed and refused globals, edge values:
    most are malformed, many reach the rebuild functions with odd arguments."""
    piece = st.sampled_from(_G) | st.sampled_from(_LEAVES) | st.sampled_from(_OPS)
    return st.lists(piece, max_size=60).map(lambda ps: b"\x80\x02" + b"".join(ps) + b".")


def test_pickle_opcodes(files, tmp_path_factory):
    from ptfiles import archive

    codec = make("codec/torch", max_bytes=CAP)
    folder = _case_dir(tmp_path_factory, "ops")

    @budget(300)
    @given(_opcode_runs())
    def case(pkl):
        p = folder / "f.pt"
        p.write_bytes(archive(pkl, files["storages"]))
        checked("pickle-ops", codec.read, p)

    case()


def test_zip_reader(files, tmp_path_factory):
    codec = make("codec/torch", max_bytes=CAP)
    folder = _case_dir(tmp_path_factory, "zip")
    donors = (files["m.safetensors"], files["data.pkl"])

    @budget(250)
    @given(inputs(files["m.pt"], donors) | st.binary(max_size=64).map(lambda b: b"PK\x03\x04" + b))
    def case(data):
        checked("zip", lambda: SafeZip(data, "f.pt", CAP) and None)
        p = folder / "f.pt"
        p.write_bytes(data)
        checked("zip", codec.read, p)

    case()


def test_safetensors_reader(files, tmp_path_factory):
    codec = make("codec/safetensors", max_bytes=CAP)

    @budget(400)
    @given(inputs(files["m.safetensors"], (files["m.pt"],)))
    def case(data):
        checked("safetensors", loads, data)
        checked("safetensors", codec.loads, data, "f.safetensors")

    case()


def test_onnx_graph_reader(files, tmp_path_factory):
    """A graph imported op by op (no catalog form as a whole): mutations of every node."""
    codec = make("codec/onnx", max_bytes=CAP)
    folder = _case_dir(tmp_path_factory, "onnx_graph")

    @budget(150)
    @given(inputs(files["mha.onnx"], (files["m.onnx"],)))
    def case(data):
        p = folder / "mha.onnx"
        p.write_bytes(data)
        checked("onnx", codec.read, p)

    case()


def test_onnx_reader(files, tmp_path_factory):
    codec = make("codec/onnx", max_bytes=CAP)
    folder = _case_dir(tmp_path_factory, "onnx")

    @budget(250)
    @given(inputs(files["m.onnx"], (files["m.safetensors"],)))
    def case(data):
        p = folder / "m.onnx"
        p.write_bytes(data)
        checked("onnx", codec.read, p)

    case()


def test_bundle_importer(files, tmp_path_factory):
    folder = _case_dir(tmp_path_factory, "bundle")

    @budget(60)
    @given(inputs(files["b.tar"], random_size=1024))
    def case(data):
        root = folder / str(next(_n))
        records = Records(root)
        try:
            checked("bundle", import_run, ObjectStore(root), records, data)
        finally:
            records.close()

    case()


def _retar(bundle: bytes, run_json: bytes) -> bytes:
    src = tarfile.open(fileobj=io.BytesIO(bundle))
    buf = io.BytesIO()
    with src, tarfile.open(fileobj=buf, mode="w") as out:
        for m in src.getmembers():
            data = run_json if m.name == "run.json" else src.extractfile(m).read()
            m.size = len(data)
            out.addfile(m, io.BytesIO(data))
    return buf.getvalue()


def test_bundle_rows(files, tmp_path_factory):
    """The bundle again, its run.json mutated inside a well-formed tar: the rows' checks."""
    folder = _case_dir(tmp_path_factory, "rows")
    with tarfile.open(fileobj=io.BytesIO(files["b.tar"])) as t:
        run_json = t.extractfile("run.json").read()

    edges = (b'"started": "x", ', b"[[[[", b"1e999", b"-1, ", b"null", b"9999999999999999999",
             b"-9223372036854775809", b"NaN", b'"\\u0000"', b"true")  # fmt: skip

    hostile = st.sampled_from([None, True, -1, 0, 2**63, -(2**63) - 1, 9_999_999_999_999_999_999,
                               1.5, float("nan"), float("inf"), "", "x", "../../x", "0" * 64,
                               "[1]", "{}", [], {}, [[[]]], {"a": 1}])  # fmt: skip
    tables = ("run", "checkpoints", "metrics", "datasets")

    @st.composite
    def edited(draw) -> bytes:
        """run.json with a few cells (or whole entries) set to hostile values."""
        doc = json.loads(run_json)
        for _ in range(draw(st.integers(1, 3))):
            table = draw(st.sampled_from(tables))
            target = doc[table] if table == "run" else None
            if table != "run":
                if not doc[table]:
                    continue
                target = doc[table][draw(st.integers(0, len(doc[table]) - 1))]
            if not isinstance(target, dict):
                continue
            column = draw(st.sampled_from(sorted(target) + ["evil"]))
            target[column] = draw(hostile)
        if draw(st.integers(0, 9)) == 0:
            doc[draw(st.sampled_from(tables))] = draw(hostile)
        return json.dumps(doc).encode()

    @budget(100)
    @given(mutations(run_json, edges) | edited() | edited())
    def case(data):
        root = folder / str(next(_n))
        records = Records(root)
        try:
            checked(
                "bundle-rows", import_run, ObjectStore(root), records, _retar(files["b.tar"], data)
            )
        finally:
            records.close()

    case()


def test_state_files(tmp_path_factory):
    """scellis.load: the saved tree (JSON in the safetensors metadata) mutated in place,
    the file around it well-formed; and the whole file's bytes mutated."""
    import scellis as sc
    from scellis.store.safetensors import dumps

    folder = _case_dir(tmp_path_factory, "state")
    obj = {"w": sc.tensor([[1.0, 2.0]]), "step": 3, "hist": [0.5, ("a", None)],
           "opt": {1: {"m": sc.tensor([3.0])}}}  # fmt: skip
    sc.save(obj, folder / "seed.safetensors")
    seed = (folder / "seed.safetensors").read_bytes()
    views, meta = loads(seed)
    tree = meta["scellis.tree"].encode()
    raw = {k: (d, s, bytes(v)) for k, (d, s, v) in views.items()}

    def rewrap(t: bytes) -> bytes:
        return dumps(raw, {"scellis.tree": t.decode("utf-8", "replace")})

    @budget(150)
    @given(mutations(tree, (b'{"__tensor__":"zz"}', b'{"__float__":"x"}', b"[[[["))
           .map(rewrap) | inputs(seed))  # fmt: skip
    def case(data):
        p = folder / "f.safetensors"
        p.write_bytes(data)
        checked("state-file", sc.load, p, "reference")

    case()


BUNDLED = ROOT / "src" / "scellis" / "data" / "bundled"


def test_data_files(tmp_path_factory):
    """CSV series (with a datetime column) and text files as a record's data names them."""
    from scellis.data import read_csv_column
    from scellis.data.record import load_data

    folder = _case_dir(tmp_path_factory, "data")
    series = BUNDLED.joinpath("sunspots_yearly.csv").read_bytes()
    text = BUNDLED.joinpath("python_help_topics.txt").read_bytes()[:3000]
    csv = {"source": "d.csv", "format": "csv", "column": "sunspots", "window": 4,
           "horizon": 1, "val_fraction": 0.2, "normalise": "standard",
           "datetime": "year", "datetime_format": "year", "missing": "ffill"}  # fmt: skip
    txt = {"source": "d.txt", "format": "text", "context": 8, "val_fraction": 0.2}

    @budget(150)
    @given(inputs(series, (text,)), inputs(text, (series,)))
    def case(a, b):
        (folder / "d.csv").write_bytes(a)
        (folder / "d.txt").write_bytes(b)
        checked("data", load_data, csv, folder)
        checked("data", read_csv_column, folder / "d.csv", "sunspots")
        checked("data", load_data, txt, folder)

    case()


EXAMPLES = tuple(p.read_bytes() for p in sorted((ROOT / "examples").glob("*.sml")))


def test_sml_parse_and_validate():
    reg = catalog_registry()

    def parse_validate(text: str):
        return validate(parse(text, "f.sml"), reg)

    @budget(150)
    @given(
        st.sampled_from(range(len(EXAMPLES))).flatmap(lambda i: inputs(EXAMPLES[i], EXAMPLES))
        | st.text(max_size=400)
    )
    def case(data):
        text = data if isinstance(data, str) else data.decode("utf-8", "replace")
        checked("sml", parse_validate, text)

    case()
