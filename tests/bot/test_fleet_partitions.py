"""Detection in partitions: a clustered Parquet file read partition by partition (and dedup fed
only the series it asks for) gives the report of reading everything at once; the report is the
same on every executor, a real Dask LocalCluster included."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_runner import run_cli
from fleet_sim import FleetSpec, simulate_realistic_fleet
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from regbot.bot.views.progress import RunProgress
from regbot.partition_ranges import partition_ranges
from regbot.profiles.series_arrow import write_series_parquet
from regbot.profiles.series_csv import write_series_csv
from regbot.profiles.series_partitions import plan_series_partitions

SPEC = FleetSpec(
    n_series=600,
    n_points=500,
    n_regressions=12,
    n_creeps=2,
    n_transients=5,
    n_seasonal_peaks=3,
    n_cost_shifts=3,
    n_improvements=3,
)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fleet")
    series, _ = simulate_realistic_fleet(SPEC, 5)
    write_series_parquet(series, folder / "fleet.parquet")
    write_series_csv(series, folder / "fleet.csv")
    return folder


def _config(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text("detection:\n  partition_series: 200\n" + text)
    return path


def _report(folder: Path, series: Path, config: Path, name: str) -> dict:
    out = folder / f"{name}.json"
    code, _, err = run_cli("detect", str(series), "-c", str(config), "--no-state", "-o", str(out))
    assert code == 0, err
    report = json.loads(out.read_text())
    assert report["funnel"]["series"] == SPEC.n_series
    return report


@given(st.integers(0, 5000), st.integers(1, 700))
def test_partitions_are_balanced_cover_every_series_in_order(n: int, size: int) -> None:
    ranges = partition_ranges(n, size)
    assert ranges[0][0] == 0 and ranges[-1][1] == n
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    lengths = [b - a for a, b in ranges]
    assert max(lengths) <= max(size, 0) or n == 0
    assert max(lengths) - min(lengths) <= 1
    assert len(ranges) == max(1, -(-n // size))


def test_a_clustered_parquet_file_is_read_by_row_ranges(fleet: Path) -> None:
    partitions, survey = plan_series_partitions([fleet / "fleet.parquet"], 200)
    assert survey.streamed and len(survey.ids) == SPEC.n_series
    assert [len(p.rows) for p in partitions] == [1, 1, 1]
    loaded = [s for p in partitions for s in p.load()]
    assert [s.id for s in loaded] == survey.ids
    assert [len(p.load()) for p in partitions] == [200, 200, 200]


def test_streamed_parquet_gives_the_report_of_reading_everything(fleet: Path) -> None:
    config = _config(fleet, "local.yml", "")
    whole = _report(fleet, fleet / "fleet.csv", config, "csv")
    streamed = _report(fleet, fleet / "fleet.parquet", config, "parquet")
    assert whole["regressions"], "the fleet's regressions are found"
    assert streamed == whole


def test_interleaved_rows_are_read_whole_with_the_same_report(fleet: Path) -> None:
    """Rows in any order: read whole. Partitions follow the order of first appearance, so the
    comparison is made with the fleet in one partition (the fleet load of a partition depends
    on which series it holds)."""
    table = pq.read_table(fleet / "fleet.parquet")
    order = np.random.default_rng(1).permutation(table.num_rows)
    pq.write_table(table.take(pa.array(order)), fleet / "shuffled.parquet")
    partitions, survey = plan_series_partitions([fleet / "shuffled.parquet"], 200)
    assert not survey.streamed and all(p.series and not p.rows for p in partitions)
    whole = fleet / "whole.yml"
    whole.write_text("detection:\n  partition_series: 1000\n")
    ids = [r["id"] for r in _report(fleet, fleet / "fleet.csv", whole, "csv")["regressions"]]
    shuffled = _report(fleet, fleet / "shuffled.parquet", whole, "shuffled")
    assert sorted(r["id"] for r in shuffled["regressions"]) == sorted(ids)


def test_trailing_rows_without_values_do_not_move_the_windows(fleet: Path) -> None:
    table = pq.read_table(fleet / "fleet.parquet")
    last = pa.compute.max(table.column("timestamp")).as_py()
    extra = pa.table(
        {
            "timestamp": pa.array([last + 600.0] * 3),
            "series": pa.array(table.column("series").to_pylist()[:3]).dictionary_encode(),
            "value": pa.array([None, None, None], pa.float64()),
        }
    )
    rows = table.select(["timestamp", "series", "value"])
    joined = pa.concat_tables([rows, extra.cast(rows.schema)])
    pq.write_table(joined, fleet / "trailing.parquet")
    config = _config(fleet, "local.yml", "")
    plain = _report(fleet, fleet / "fleet.csv", config, "csv")
    trailing = _report(fleet, fleet / "trailing.parquet", config, "trailing")
    assert trailing["window"] == plain["window"]


def test_every_executor_gives_the_same_report(fleet: Path) -> None:
    local = _report(fleet, fleet / "fleet.parquet", _config(fleet, "local.yml", ""), "local")
    processes = _config(fleet, "processes.yml", "execution:\n  engine: processes\n  workers: 2\n")
    dask = _config(fleet, "dask.yml", "execution:\n  engine: dask\n  workers: 2\n")
    assert _report(fleet, fleet / "fleet.parquet", processes, "processes") == local
    assert _report(fleet, fleet / "fleet.parquet", dask, "dask") == local


def test_an_unreachable_scheduler_is_one_line_naming_the_key(tmp_path: Path, fleet: Path) -> None:
    config = tmp_path / "regbot.yml"
    config.write_text("execution:\n  engine: dask\n  scheduler: tcp://127.0.0.1:9\n")
    code, _, err = run_cli("detect", str(fleet / "fleet.parquet"), "-c", str(config), "--no-state")
    assert code == 2
    assert err.startswith("regbot: execution.scheduler: expected a reachable Dask scheduler")
    assert len(err.strip().splitlines()) == 1


def test_a_scheduler_needs_the_dask_engine(tmp_path: Path, fleet: Path) -> None:
    config = tmp_path / "regbot.yml"
    config.write_text("execution:\n  engine: processes\n  scheduler: tcp://127.0.0.1:8786\n")
    code, _, err = run_cli("detect", str(fleet / "fleet.parquet"), "-c", str(config))
    assert code == 2 and f"{config}:3: execution.scheduler" in err


def test_progress_shows_on_a_terminal_and_not_when_quiet() -> None:
    def shown(terminal: bool, quiet: bool) -> str:
        stream = io.StringIO()
        console = Console(file=stream, force_terminal=terminal, width=100)
        with RunProgress(console, quiet) as progress:
            done = progress.stage("detecting (local)", 3)
            for k in range(3):
                done(k)
            progress.stage("deduplicating")
        return stream.getvalue()

    assert "detecting (local)" in shown(True, False)
    assert shown(True, True) == "" and shown(False, False) == ""
