"""The sample store: appends, re-ingest, atomic commits, queries (FBDetect Table 2)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regbot.errors import InputError
from regbot.profiles.folded import parse_folded
from regbot.profiles.model import ParseOptions
from regbot.profiles.sample_index import SampleIndex
from regbot.profiles.store import (
    COMPACT_AFTER,
    TABLES,
    aggregate_records,
    bucket_start,
    open_store,
)

OPTIONS = ParseOptions()


def add_folded(store, text: str, at_s: float, key: str) -> bool:
    samples = parse_folded(text.encode(), source=key, table=store.table, at_s=at_s, options=OPTIONS)
    return store.add(samples, key)


def table2_store(path: Path):
    """FBDetect Table 2 as sample counts: B's stacks before (t=0) and after (t=60) a regression,
    out of 100 samples per bucket (the rest are stacks without B)."""
    store = open_store(path)
    before = "A;B;C 1\nB;E;F 2\nD;B;C 2\nB;E;D 4\nX;Y 91\n"
    after = "A;B;C 2\nB;E;F 3\nD;B;C 2\nB;E;D 6\nG;B;D 1\nX;Y 86\n"
    add_folded(store, before, 0, "before")
    add_folded(store, after, 60, "after")
    store.commit()
    return store


def test_table2_attribution_counts_give_80_percent(tmp_path: Path) -> None:
    store = table2_store(tmp_path / "s")
    index = SampleIndex(store.table, store.records())
    regression = index.samples_with("B", 60, 120) / index.total(60, 120) - index.samples_with(
        "B", 0, 60
    ) / index.total(0, 60)
    attributed = (
        index.samples_with_any("B", ["A", "E"], 60, 120) / 100
        - index.samples_with_any("B", ["A", "E"], 0, 60) / 100
    )
    assert regression == pytest.approx(0.05)
    assert attributed == pytest.approx(0.04)
    assert attributed / regression == pytest.approx(0.80)


def test_queries_callers_and_popularity(tmp_path: Path) -> None:
    store = table2_store(tmp_path / "s")
    index = SampleIndex(store.table, store.records())
    assert index.total() == 200
    assert index.callers("B", 60, 120) == {"A": 2.0, "D": 2.0, "G": 1.0}
    assert index.callers("B", 0, 60) == {"A": 1.0, "D": 2.0}
    assert index.popularity("B", 0, 60) == pytest.approx(0.09)
    assert index.samples_with("nothing") == 0.0
    assert index.callers("nothing") == {}


def test_reopen_and_reingest_do_not_double_count(tmp_path: Path) -> None:
    path = tmp_path / "s"
    table2_store(path)
    again = open_store(path)
    assert not add_folded(again, "A;B;C 1\nB;E;F 2\nD;B;C 2\nB;E;D 4\nX;Y 91\n", 0, "before")
    again.commit()
    reopened = open_store(path)
    index = SampleIndex(reopened.table, reopened.records())
    assert index.total() == 200
    assert len(reopened.segments) == 1


def test_failed_run_leaves_store_intact(tmp_path: Path) -> None:
    path = tmp_path / "s"
    table2_store(path)
    manifest_before = (path / "manifest.json").read_bytes()
    store = open_store(path)
    add_folded(store, "A;Q 5\n", 120, "good")
    with pytest.raises(InputError):
        add_folded(store, "A;Q five\n", 180, "bad")
    # the run dies here without commit: nothing on disk changed
    assert (path / "manifest.json").read_bytes() == manifest_before
    assert open_store(path).records().weight.sum() == 200


def test_appends_accumulate_and_compact(tmp_path: Path) -> None:
    path = tmp_path / "s"
    for i in range(COMPACT_AFTER + 2):
        store = open_store(path)
        add_folded(store, f"root;f{i % 3} {i + 1}\n", 60 * (i % 4), f"k{i}")
        store.commit()
    store = open_store(path)
    assert len(store.segments) <= COMPACT_AFTER
    assert store.records().weight.sum() == sum(range(1, COMPACT_AFTER + 3))
    for table in TABLES:  # each table folder holds exactly the manifest's segments
        assert sorted(p.stem for p in (path / table).iterdir()) == store.segments
    assert sorted(p.name for p in path.iterdir() if not p.name.startswith(".")) == [
        "frames",
        "manifest.json",
        "records",
        "stacks",
    ]
    assert set(json.loads((path / "manifest.json").read_text())["ingested"]) == {
        f"k{i}" for i in range(COMPACT_AFTER + 2)
    }


def test_bucket_width_is_fixed_per_store(tmp_path: Path) -> None:
    path = tmp_path / "s"
    store = open_store(path, 300)
    add_folded(store, "a 1\n", 299, "k")
    store.commit()
    assert open_store(path).records().bucket_s.tolist() == [0]
    with pytest.raises(InputError, match="bucket width 300s"):
        open_store(path, 60)


def test_refuses_foreign_folder_and_broken_manifest(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "notes.txt").write_text("hi")
    with pytest.raises(InputError, match="regbot sample store"):
        open_store(tmp_path / "x")
    (tmp_path / "y").mkdir()
    (tmp_path / "y" / "manifest.json").write_text("{trunc")
    with pytest.raises(InputError, match="manifest"):
        open_store(tmp_path / "y")


def test_bucket_start_floors() -> None:
    assert bucket_start(np.array([0.0, 59.9, 60.0, -0.5]), 60).tolist() == [0, 0, 60, -60]


@settings(max_examples=60, derandomize=True, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.integers(0, 30), st.floats(0, 100, allow_nan=False)),
        max_size=60,
    )
)
def test_aggregate_matches_a_dictionary_sum(rows) -> None:
    bucket = np.array([r[0] * 60 for r in rows], dtype=np.int64)
    stack = np.array([r[1] for r in rows], dtype=np.int64)
    weight = np.array([r[2] for r in rows], dtype=np.float64)
    records = aggregate_records(bucket, stack, weight)
    expected: dict[tuple[int, int], float] = {}
    for b, s, w in zip(bucket.tolist(), stack.tolist(), weight.tolist()):
        expected[(b, s)] = expected.get((b, s), 0.0) + w
    got = {
        (b, s): w
        for b, s, w in zip(
            records.bucket_s.tolist(), records.stack.tolist(), records.weight.tolist()
        )
    }
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == pytest.approx(value)


def test_ancestors_and_stack_share(tmp_path: Path) -> None:
    store = table2_store(tmp_path / "s")
    index = SampleIndex(store.table, store.records())
    assert index.ancestors("C") == {"A", "B", "D"}
    assert index.ancestors("D") == {"B", "E", "G"}
    assert index.ancestors("B") == {"A", "D", "G"}
    assert index.ancestors("nothing") == set()
    ids, weights = index.stack_share("B", 60, 120)
    assert weights.sum() == 14 and list(ids) == sorted(ids)
    ids_before, _ = index.stack_share("B", 0, 60)
    assert len(ids_before) == len(ids) - 1  # G;B;D did not exist before


def test_downstream_positions_leave_out_a_recursive_caller(tmp_path: Path) -> None:
    """``a → b → a → c``: ``a`` sits below ``b`` but also above it, so it is ``b``'s caller on
    that stack; ``c`` (called by b's callee) and ``b`` itself are downstream."""
    from sample_stores import index_of

    text = (
        "main (m.py:1);a (m.py:2);b (m.py:3);a (m.py:2);c (m.py:4) 5\n"
        "main (m.py:1);b (m.py:3);a (m.py:2) 3\n"
    )
    index = index_of(tmp_path, text, text)
    frames = [index.frames[int(f)] for f in index.stack_frames]
    down = index.downstream_positions("b (m.py)", ["a (m.py)", "b (m.py)", "c (m.py)"])
    found = sorted({frames[p] for p in np.flatnonzero(down)})
    below = index.stacks_with_any_below("b (m.py)", ["a (m.py)"])
    assert "c (m.py:4)" in found and "b (m.py:3)" in found
    # a is downstream only on the stack where it is not also above b
    a_positions = [p for p in np.flatnonzero(down) if frames[p].startswith("a ")]
    assert len(a_positions) == 1
    assert below.sum() == 1
