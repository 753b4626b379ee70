"""The sources behind one protocol: each configured source (profile files, series files) is a
``Source`` whose ``fetch`` gives its series, and a run's series are theirs, counted per source."""

from __future__ import annotations

from pathlib import Path

from regbot.bot.config import load_config
from regbot.bot.sources import FetchWindow, Source, configured_sources, gather_series
from regbot.bot.sources.source import ProfileSource, SeriesFileSource

T0 = 1_800_000_000


def _scenario(root: Path) -> Path:
    profiles = root / "profiles"
    profiles.mkdir()
    for bucket in range(3):
        (profiles / f"{T0 + 60 * bucket}.folded").write_text(
            "main;handle;parse 30\nmain;handle;render 60\nmain;idle 10\n"
        )
    metrics = root / "metrics"
    metrics.mkdir()
    rows = ["timestamp,series,value,kind"]
    rows += [f"{T0 + 60 * i},latency:api,{100 + i},latency" for i in range(3)]
    rows += [f"{T0 + 60 * i},flag:new_checkout,{i % 2},feature_flag" for i in range(3)]
    (metrics / "m.csv").write_text("\n".join(rows) + "\n")
    config = root / "regbot.yml"
    config.write_text(
        "sources:\n  profiles: [profiles/]\n  series: [metrics/]\n"
        "attribution:\n  signal_kinds: [feature_flag]\nstate: state.db\n"
    )
    return config


def test_each_configured_source_is_a_source_and_a_run_gathers_theirs(tmp_path: Path) -> None:
    config = load_config(_scenario(tmp_path))
    sources = configured_sources(config)
    assert [type(s) for s in sources] == [ProfileSource, SeriesFileSource]
    assert all(isinstance(s, Source) for s in sources)
    window = FetchWindow(T0, T0 + 180)
    fetched = {s.name: s.fetch(window) for s in sources}
    assert {s.id for s in fetched["profiles"]} >= {"gcpu:parse", "gcpu:render", "gcpu:main"}
    assert {s.id for s in fetched["series"]} == {"latency:api", "flag:new_checkout"}

    run = gather_series(config, T0, T0 + 180)
    assert run.counts == {"profiles": len(fetched["profiles"]), "series": 2}
    assert run.index is not None
    # the feature flag is a signal for attribution, never a series to detect on
    assert [s.id for s in run.signals] == ["flag:new_checkout"]
    expected = [s.id for s in fetched["profiles"]] + ["latency:api"]
    assert sorted(s.id for s in run.series) == sorted(expected)
