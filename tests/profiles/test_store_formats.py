"""The sample store on disk: the Parquet layout (regbot-store/2), reading and appending to a
regbot-store/1 (npz) store, interrupted writes, and damaged segments refused in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_runner import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

import regbot.profiles.store_parquet as store_parquet
from regbot.errors import InputError
from regbot.profiles.folded import parse_folded
from regbot.profiles.gcpu import build_gcpu
from regbot.profiles.model import ParseOptions
from regbot.profiles.sample_index import SampleIndex
from regbot.profiles.store import FORMAT, FORMAT_NPZ, TABLES, SampleStore, open_store

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sample_store_v1"
EXPECTED = json.loads((FIXTURE / "expected.json").read_text(encoding="utf-8"))


def ingest(store: Path, *inputs: Path) -> None:
    for folder in inputs:
        code, _, err = run_cli("ingest", str(folder), "--store", str(store))
        assert code == 0, err


def contents(store: SampleStore) -> dict[str, object]:
    """What a store reads back, in expected.json's shape."""
    arrays = store.stack_arrays()
    records = store.records()
    matrix = build_gcpu(SampleIndex.of_store(store), floor=0)
    bounds = arrays.offsets.tolist()
    flat = arrays.stack_frames.tolist()
    return {
        "frames": arrays.frames,
        "stacks": [flat[a:b] for a, b in zip(bounds[:-1], bounds[1:])],
        "records": {
            "bucket_s": records.bucket_s.tolist(),
            "stack": records.stack.tolist(),
            "weight": records.weight.tolist(),
        },
        "gcpu": {
            "timestamps_s": matrix.timestamps_s.tolist(),
            "series": {n: matrix.values[i].tolist() for i, n in enumerate(matrix.subroutines)},
        },
    }


def old_store(tmp_path: Path) -> Path:
    path = tmp_path / "old"
    shutil.copytree(FIXTURE / "store", path)
    return path


def new_store(tmp_path: Path) -> Path:
    path = tmp_path / "new"
    ingest(path, FIXTURE / "first", FIXTURE / "second")
    return path


# -- the two formats read the same -----------------------------------------------------------
def test_an_npz_store_reads_as_the_npz_version_read_it(tmp_path: Path) -> None:
    store = open_store(old_store(tmp_path))
    assert store.format == FORMAT_NPZ
    assert contents(store) == EXPECTED
    assert store.bucket_times().tolist() == sorted(set(EXPECTED["records"]["bucket_s"]))


def test_the_same_runs_write_parquet_that_reads_the_same(tmp_path: Path) -> None:
    path = new_store(tmp_path)
    store = open_store(path)
    assert store.format == FORMAT == json.loads((path / "manifest.json").read_text())["format"]
    assert store.segments == ["seg-000001", "seg-000002"]
    for table in TABLES:
        assert sorted(p.name for p in (path / table).iterdir()) == [
            "seg-000001.parquet",
            "seg-000002.parquet",
        ]
    assert contents(store) == EXPECTED
    # the row-based index and the batch-built one agree
    rows = SampleIndex(store.table, store.records())
    assert (rows.counts != SampleIndex.of_store(store).counts).nnz == 0


def test_appending_to_an_npz_store_rewrites_it_as_one_parquet_segment(tmp_path: Path) -> None:
    path = old_store(tmp_path)
    ingest(path, FIXTURE / "second")  # already in the store: nothing written, still npz
    assert json.loads((path / "manifest.json").read_text())["format"] == FORMAT_NPZ
    assert contents(open_store(path)) == EXPECTED
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "1763800180.folded").write_text("<module> (app/main.py:1);new (app/new.py:1) 5\n")
    ingest(path, extra)
    store = open_store(path)
    assert store.format == FORMAT and store.segments == ["seg-000003"]
    assert not list(path.glob("*.npz"))
    assert store.stack_arrays().frames == [*EXPECTED["frames"], "new (app/new.py:1)"]
    records = store.records()
    assert records.weight.sum() == sum(EXPECTED["records"]["weight"]) + 5
    assert records.bucket_s[-1] == 1763800140  # floor(1763800180 / 60) * 60
    assert len(json.loads((path / "manifest.json").read_text())["ingested"]) == 5


# -- other tools read the Parquet store ------------------------------------------------------
@pytest.mark.filterwarnings("ignore:The inplace keyword")  # dask's own call into pandas
def test_pandas_duckdb_and_dask_read_the_totals_regbot_reads(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    duckdb = pytest.importorskip("duckdb")
    dd = pytest.importorskip("dask.dataframe")
    path = new_store(tmp_path)
    index = SampleIndex.of_store(open_store(path))
    regbot_totals = dict(zip(index.bucket_times_s.tolist(), index.totals.tolist()))

    by_pandas = pd.read_parquet(path / "records").groupby("bucket_s")["weight"].sum()
    assert by_pandas.to_dict() == regbot_totals
    rows = duckdb.sql(
        f"select bucket_s, sum(weight) from '{path}/records/*.parquet' group by bucket_s"
    ).fetchall()
    assert dict(rows) == regbot_totals
    by_dask = dd.read_parquet(str(path / "records")).groupby("bucket_s")["weight"].sum().compute()
    assert by_dask.to_dict() == regbot_totals
    # ids compose across segments: the union of the frames files is the whole frame table
    frames = pd.read_parquet(path / "frames")
    assert frames["frame"].tolist() == list(range(len(EXPECTED["frames"])))
    assert frames["name"].tolist() == EXPECTED["frames"]


def doc_blocks(language: str) -> list[str]:
    from markdown_it import MarkdownIt

    text = (Path(__file__).resolve().parents[2] / "docs/design/sample_store.md").read_text()
    return [t.content for t in MarkdownIt().parse(text) if t.type == "fence" and t.info == language]


@pytest.mark.filterwarnings("ignore:The inplace keyword")
def test_the_design_notes_queries_give_regbots_numbers(tmp_path: Path) -> None:
    """The SQL and pandas in docs/design/sample_store.md, run on a store regbot wrote: samples
    per frame per bucket (a recursive frame once per sample), gCPU per subroutine, totals."""
    pytest.importorskip("pandas")
    duckdb = pytest.importorskip("duckdb")
    pytest.importorskip("dask.dataframe")
    path = new_store(tmp_path)
    store = open_store(path)
    index = SampleIndex.of_store(store)
    matrix = build_gcpu(index, floor=0)
    times = index.bucket_times_s.tolist()
    expected_samples = {
        (times[b], frame): index.stack_weights(times[b], times[b] + 1)[
            index.stacks_with(frame)
        ].sum()
        for b in range(len(times))
        for frame in index.frames
    }
    expected_samples = {k: v for k, v in expected_samples.items() if v}
    expected_gcpu = {
        (times[b], name): matrix.values[i, b]
        for i, name in enumerate(matrix.subroutines)
        for b in range(len(times))
        if matrix.values[i, b]
    }

    samples_sql, gcpu_sql = (q.replace("DIR", str(path)) for q in doc_blocks("sql")[:2])
    got = {(b, f): s for b, f, s in duckdb.sql(samples_sql).fetchall()}
    assert got == pytest.approx(expected_samples)
    got = {(b, s): g for b, s, g in duckdb.sql(gcpu_sql).fetchall()}
    assert got == pytest.approx(expected_gcpu)

    names: dict[str, object] = {}
    for block in doc_blocks("python"):
        exec(block.replace("DIR", str(path)), names)
    samples = names["samples"]
    got = {(b, f): s for b, f, s in samples.itertuples(index=False)}
    assert got == pytest.approx(expected_samples)
    assert names["totals"].to_dict() == dict(zip(times, index.totals.tolist()))
    assert names["dask_totals"].to_dict() == dict(zip(times, index.totals.tolist()))
    assert len(names["listed"]) == len(store.records())


# -- frames Parquet cannot hold as strings, and empty stacks ---------------------------------
def test_frames_that_are_not_utf8_keep_their_ids(tmp_path: Path) -> None:
    path = tmp_path / "s"
    store = open_store(path)
    data = b"main;caf\xe9 (m.py:1) 3\n 2\n"
    store.add(
        parse_folded(data, source="a", table=store.table, at_s=0, options=ParseOptions()), "a"
    )
    store.commit()
    frames = pq.read_table(path / "frames").to_pylist()
    assert frames[1]["name"] == "caf? (m.py:1)" and frames[1]["subroutine"] == "caf? (m.py)"
    assert frames[0]["raw"] is None and frames[1]["raw"] is not None
    again = open_store(path)
    assert again.stack_arrays().frames == store.stack_arrays().frames
    again.add(
        parse_folded(data, source="b", table=again.table, at_s=60, options=ParseOptions()), "b"
    )
    again.commit()
    reopened = open_store(path)
    assert reopened.n_frames == 2 and reopened.n_stacks == 2  # the empty stack included
    assert pq.read_table(path / "stacks").column("frames").to_pylist() == [[0, 1], []]
    assert reopened.records().weight.sum() == 10


# -- records read in batches -----------------------------------------------------------------
@settings(max_examples=25, derandomize=True, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(st.integers(0, 6), st.integers(0, 4), st.integers(1, 9)),
            min_size=1,
            max_size=12,
        ),
        min_size=1,
        max_size=4,
    )
)
def test_counts_built_a_few_rows_at_a_time_match_the_rows(runs) -> None:
    """Several segments (buckets shared between them), row groups and batches of 2 rows: the
    matrix built batch by batch equals the one built from every row at once."""
    import tempfile

    stacks = ["a;b", "a;c", "a;b;b", "d", "a;e;b"]
    with (
        tempfile.TemporaryDirectory() as folder,
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setattr(store_parquet, "BATCH_ROWS", 2)
        patch.setattr(store_parquet, "ROW_GROUP_ROWS", 3)
        path = Path(folder) / "s"
        for i, rows in enumerate(runs):
            store = open_store(path)
            for j, (bucket, s, w) in enumerate(rows):
                line = f"{stacks[s]} {w}\n".encode()
                samples = parse_folded(
                    line, source="x", table=store.table, at_s=60 * bucket, options=ParseOptions()
                )
                store.add(samples, f"{i}-{j}")
            store.commit()
        store = open_store(path)
        rows_index = SampleIndex(store.table, store.records())
        batch_index = SampleIndex.of_store(store)
        assert np.array_equal(rows_index.bucket_times_s, batch_index.bucket_times_s)
        assert np.array_equal(rows_index.counts.toarray(), batch_index.counts.toarray())
        assert store.bucket_times().tolist() == rows_index.bucket_times_s.tolist()


# -- interrupted writes ----------------------------------------------------------------------
def test_a_run_interrupted_before_its_manifest_leaves_the_store_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = new_store(tmp_path)
    manifest = (path / "manifest.json").read_bytes()
    before = contents(open_store(path))
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "1763800180.folded").write_text("x (x.py:1) 5\n")

    class Killed(BaseException):
        """The process dying here (nothing catches it)."""

    def die(self: SampleStore) -> None:
        raise Killed

    monkeypatch.setattr(SampleStore, "_write_manifest", die)
    with pytest.raises(Killed):
        run_cli("ingest", str(extra), "--store", str(path))
    monkeypatch.undo()
    assert (path / "manifest.json").read_bytes() == manifest
    assert (path / "records" / "seg-000003.parquet").exists()  # written, not listed
    assert contents(open_store(path)) == before
    (path / "stacks" / ".seg-000009.parquet.x.tmp").write_bytes(b"half")  # a killed write
    ingest(path, extra)  # the next run writes its segment over the unlisted one, then lists it
    store = open_store(path)
    assert store.segments == ["seg-000001", "seg-000002", "seg-000003"]
    for table in TABLES:
        assert sorted(p.stem for p in (path / table).iterdir()) == store.segments
    assert store.records().weight.sum() == sum(EXPECTED["records"]["weight"]) + 5


def test_a_segment_write_that_fails_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = new_store(tmp_path)
    manifest = (path / "manifest.json").read_bytes()

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", broken)
    store = open_store(path)
    store.add(
        parse_folded(b"x 1\n", source="k", table=store.table, at_s=0, options=ParseOptions()), "k"
    )
    with pytest.raises(OSError, match="disk full"):
        store.commit()
    assert (path / "manifest.json").read_bytes() == manifest
    assert sorted(p.name for p in (path / "frames").iterdir()) == [
        "seg-000001.parquet",
        "seg-000002.parquet",
    ]


# -- damaged stores: one line naming the file ------------------------------------------------
def write_table(file: Path, columns: dict[str, pa.Array]) -> None:
    pq.write_table(pa.table(columns), file)


def damage_records(file: Path, **columns: object) -> None:
    table = pq.read_table(file).to_pydict()
    table.update(columns)
    pq.write_table(pa.table(table), file)


DAMAGES = {
    "not parquet": lambda p: (p / "records/seg-000001.parquet").write_bytes(b"PAR1 garbage"),
    "truncated": lambda p: (p / "stacks/seg-000002.parquet").write_bytes(
        (p / "stacks/seg-000002.parquet").read_bytes()[:-40]
    ),
    "missing file": lambda p: (p / "frames/seg-000002.parquet").unlink(),
    "missing column": lambda p: write_table(
        p / "records/seg-000001.parquet", {"bucket_s": pa.array([0], pa.int64())}
    ),
    "a null": lambda p: write_table(
        p / "records/seg-000001.parquet",
        {
            "bucket_s": pa.array([0, None], pa.int64()),
            "stack": pa.array([0, 1], pa.int64()),
            "weight": pa.array([1.0, 2.0]),
        },
    ),
    "text for a number": lambda p: write_table(
        p / "records/seg-000001.parquet",
        {
            "bucket_s": pa.array(["soon"]),
            "stack": pa.array([0], pa.int64()),
            "weight": pa.array([1.0]),
        },
    ),
    "stack out of range": lambda p: damage_records(
        p / "records/seg-000002.parquet", stack=[99] * 5
    ),
    "buckets out of order": lambda p: damage_records(
        p / "records/seg-000002.parquet", bucket_s=[120, 60, 60, 60, 0]
    ),
    "infinite weight": lambda p: damage_records(
        p / "records/seg-000002.parquet", weight=[float("inf")] * 5
    ),
    "frame ids": lambda p: write_table(
        p / "frames/seg-000002.parquet",
        {
            "frame": pa.array([3], pa.int32()),
            "name": pa.array(["x"]),
            "subroutine": pa.array(["x"]),
            "raw": pa.array([None], pa.binary()),
        },
    ),
    "stack frame out of range": lambda p: write_table(
        p / "stacks/seg-000002.parquet",
        {"stack": pa.array([6, 7], pa.int64()), "frames": pa.array([[0, 50], []])},
    ),
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_segment_is_one_line_naming_its_file(tmp_path: Path, damage: str) -> None:
    path = new_store(tmp_path)
    DAMAGES[damage](path)
    with pytest.raises(InputError) as raised:
        SampleIndex.of_store(open_store(path))
    message = str(raised.value)
    assert str(path / "") in message and "seg-00000" in message and "\n" not in message
    code, out, err = run_cli("gcpu", "--store", str(path))
    assert code == 2 and "Traceback" not in err + out
    assert len(err.strip().splitlines()) == 1 and "seg-00000" in err


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("segments", ["../../etc/passwd"]),
        ("segments", ["seg-000001.npz"]),  # an npz name in a format-2 manifest
        ("segments", "seg-000001"),
        ("bucket_width_s", "60"),
        ("frames", 3),
        ("format", "regbot-store/9"),
    ],
)
def test_a_damaged_manifest_is_one_line(tmp_path: Path, field: str, value: object) -> None:
    path = new_store(tmp_path)
    manifest = json.loads((path / "manifest.json").read_text())
    manifest[field] = value
    (path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(InputError, match="manifest.json"):
        open_store(path)


def test_a_damaged_npz_segment_is_one_line_naming_its_file(tmp_path: Path) -> None:
    path = old_store(tmp_path)
    (path / "seg-000002.npz").write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(InputError, match=r"seg-000002\.npz: expected a readable regbot store"):
        open_store(path)
    code, _, err = run_cli("gcpu", "--store", str(path))
    assert code == 2 and len(err.strip().splitlines()) == 1


def test_reading_and_writing_the_store_does_not_import_pandas(tmp_path: Path) -> None:
    """pyarrow's ``pa.array`` and ``to_numpy`` import pandas when it is installed (~0.4 s, ~40 MB
    for `regbot ingest` and `regbot gcpu`); the store goes through buffers instead."""
    import subprocess
    import sys

    program = """
import sys
from pathlib import Path
from regbot.profiles.folded import parse_folded
from regbot.profiles.model import ParseOptions
from regbot.profiles.sample_index import SampleIndex
from regbot.profiles.store import open_store
store = open_store(Path(sys.argv[1]))
data = b"a;b 1\\ncaf\\xe9;b 2\\n 3\\n"
store.add(parse_folded(data, source="x", table=store.table, at_s=0, options=ParseOptions()), "x")
store.commit()
store = open_store(Path(sys.argv[1]))
SampleIndex.of_store(store)
store.bucket_times()
store.compact()
assert store.records().weight.sum() == 6
print("pandas" in sys.modules)
"""
    done = subprocess.run(
        [sys.executable, "-c", program, str(tmp_path / "s")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "False"
