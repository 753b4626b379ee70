"""gCPU series: the store's sparse products against a naive recount of the raw samples."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regbot.profiles.gcpu import build_gcpu
from regbot.profiles.model import subroutine_of
from regbot.profiles.sample_index import SampleIndex
from regbot.profiles.stacks import StackTable
from regbot.profiles.store import aggregate_records, bucket_start

FRAMES = ["main", "a (x.py:1)", "a (x.py:2)", "b (y.py:3)", "c", "d_[k]", "[unknown]"]

samples_strategy = st.lists(
    st.tuples(
        st.integers(0, 4),  # bucket
        st.lists(st.sampled_from(FRAMES), min_size=0, max_size=6),  # stack, recursion allowed
        st.integers(1, 20),  # count
    ),
    min_size=1,
    max_size=40,
)


def naive_gcpu(rows, self_share: bool) -> dict[str, dict[int, float]]:
    totals: dict[int, float] = {}
    hits: dict[str, dict[int, float]] = {}
    for bucket, stack, count in rows:
        totals[bucket * 60] = totals.get(bucket * 60, 0) + count
        subs = (
            {subroutine_of(stack[-1])}
            if (self_share and stack)
            else (set() if self_share else {subroutine_of(f) for f in stack})
        )
        for sub in subs:
            per = hits.setdefault(sub, {})
            per[bucket * 60] = per.get(bucket * 60, 0) + count
    return {sub: {b: per.get(b, 0) / totals[b] for b in totals} for sub, per in hits.items()}


def index_of(rows) -> SampleIndex:
    table = StackTable()
    ids = np.array([table.intern_stack(stack) for _, stack, _ in rows], dtype=np.int64)
    times = np.array([60.0 * b + 1 for b, _, _ in rows])
    weights = np.array([float(c) for *_, c in rows])
    return SampleIndex(table, aggregate_records(bucket_start(times, 60), ids, weights))


@settings(max_examples=80, derandomize=True, deadline=None)
@given(samples_strategy, st.booleans())
def test_gcpu_equals_naive_recount(rows, self_share: bool) -> None:
    matrix = build_gcpu(index_of(rows), floor=0.0, self_share=self_share)
    expected = naive_gcpu(rows, self_share)
    got = {
        name: dict(zip(matrix.timestamps_s.astype(int).tolist(), matrix.values[i].tolist()))
        for i, name in enumerate(matrix.subroutines)
    }
    expected = {k: v for k, v in expected.items() if any(x > 0 for x in v.values())}
    assert got.keys() == expected.keys()
    for name, per_bucket in expected.items():
        for bucket, share in per_bucket.items():
            assert got[name][bucket] == pytest.approx(share)
    assert ((matrix.values >= 0) & (matrix.values <= 1 + 1e-12)).all()


def test_recursion_counts_once_and_lines_merge_into_one_subroutine() -> None:
    rows = [(0, ["main", "a (x.py:1)", "a (x.py:2)", "a (x.py:1)"], 4), (0, ["main", "c"], 6)]
    matrix = build_gcpu(index_of(rows))
    shares = dict(zip(matrix.subroutines, matrix.values[:, 0].tolist()))
    assert shares == {"a (x.py)": 0.4, "c": 0.6, "main": 1.0}


def test_triviality_floor_drops_tiny_subroutines() -> None:
    rows = [(0, ["main", "hot"], 999_999), (0, ["main", "rare"], 1)]
    names = build_gcpu(index_of(rows)).subroutines
    assert "rare" not in names and "hot" in names  # 1e-6 < 0.001%
    assert "rare" in build_gcpu(index_of(rows), floor=1e-6).subroutines


def test_series_ids_follow_spec() -> None:
    rows = [(0, ["<module> (app/views.py:3)", "handle (app/views.py:42)"], 1)]
    ids = [s.id for s in build_gcpu(index_of(rows)).series()]
    assert ids == ["gcpu:<module> (app/views.py)", "gcpu:handle (app/views.py)"]
