"""One settings tree: every key of ``regbot.yml`` lands in the field of the stage's own settings
dataclass (``Config.detection`` is a ``DetectionSettings``, ``Config.dedup`` a
``DedupSettings``...). One file with a non-default value for every key, then a table: the key,
what is written, the field it must fill and the value it must hold there."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
import yaml

from regbot.attribution.rank import RankSettings
from regbot.attribution.settings import AttributionSettings
from regbot.bot.config import (
    Config,
    CostShiftDomain,
    PrometheusQuery,
    ScrapeTarget,
    Threshold,
    load_config,
    parse_config,
)
from regbot.bot.config_reader import config_keys
from regbot.detection.presets import DEFAULT_WORKLOAD, WORKLOAD_PRESETS, WorkloadSettings
from regbot.detection.stage_settings import (
    CostShiftSettings,
    DedupSettings,
    DetectionSettings,
    MergeRule,
)

HOUR, DAY = 3600.0, 86400.0
HERE = Path("/")  # replaced by the config file's folder: a path's expected value is ``HERE / x``

# (YAML key, value written, the field it fills (None: the same dotted path), expected value)
TABLE: list[tuple[str, object, str | None, object]] = [
    ("repository.path", "repo", None, HERE / "repo"),
    ("repository.github", "owner/name", None, "owner/name"),
    ("sources.profiles", ["p1", "p2"], None, (HERE / "p1", HERE / "p2")),
    ("sources.series", "m.csv", None, (HERE / "m.csv",)),
    ("sources.prometheus.url", "http://p:9090", None, "http://p:9090"),
    (
        "sources.prometheus.queries",
        [{"name": "p99", "query": "up", "kind": "latency", "unit": "s"}],
        None,
        (PrometheusQuery("p99", "up", "latency", "s"),),
    ),
    ("sources.prometheus.step", "30s", "sources.prometheus.step_s", 30.0),
    ("sources.prometheus.timeout", "5s", "sources.prometheus.timeout_s", 5.0),
    (
        "sources.scrape.targets",
        ["http://a:6060", {"name": "b", "url": "http://b:6060/pprof"}],
        None,
        (
            ScrapeTarget("a:6060", "http://a:6060/debug/pprof/profile"),
            ScrapeTarget("b", "http://b:6060/pprof"),
        ),
    ),
    ("sources.scrape.seconds", 5, None, 5),
    ("sources.scrape.interval", "30s", "sources.scrape.interval_s", 30.0),
    ("sources.scrape.timeout", "5s", "sources.scrape.timeout_s", 5.0),
    ("sources.scrape.retries", 4, None, 4),
    ("sources.scrape.store", "scraped", None, HERE / "scraped"),
    ("sources.pyroscope.url", "http://py:4040", None, "http://py:4040"),
    ("sources.pyroscope.query", "app.cpu{}", None, "app.cpu{}"),
    ("sources.pyroscope.step", "5m", "sources.pyroscope.step_s", 300.0),
    ("sources.pyroscope.timeout", "5s", "sources.pyroscope.timeout_s", 5.0),
    ("sources.pyroscope.max_nodes", 1000, None, 1000),
    ("sources.pyroscope.path", "/render", None, "/render"),
    (
        "workloads",
        {"w": {"preset": "ct-demand", "rerun_interval": "1h"}},
        "workloads.w",
        WorkloadSettings(
            Threshold("relative", 0.05), WORKLOAD_PRESETS["ct-demand"].windows, HOUR, "ct-demand"
        ),
    ),
    ("higher_is_better", ["qps"], None, frozenset({"qps"})),
    ("detection.engine", "fbdetect", None, "fbdetect"),  # the only engine offered
    ("detection.change_point.alpha", 0.02, None, 0.02),
    ("detection.change_point.max_iterations", 20, None, 20),
    ("detection.change_point.min_points_each_side", 4, None, 4),
    ("detection.change_point.max_segment_cuts", 2, None, 2),
    ("detection.change_point.search_margin", 0.5, None, 0.5),
    ("detection.change_point.min_window_share", 0.1, None, 0.1),
    ("detection.change_point.interval_mass", "0.9", None, 0.9),
    ("detection.change_point.multiple_testing", "none", None, "none"),
    ("detection.went_away.sax_buckets", 30, None, 30),
    ("detection.went_away.sax_valid_share", 0.05, None, 0.05),
    ("detection.went_away.new_pattern_share", 0.4, None, 0.4),
    ("detection.went_away.trend_alpha", 0.02, None, 0.02),
    ("detection.went_away.mad_coefficient", 2, None, 2.0),
    ("detection.went_away.historical_percentile", 90, None, 90.0),
    ("detection.went_away.previous_day_percentile", 80, None, 80.0),
    ("detection.went_away.gone_away_points", 6, None, 6),
    ("detection.went_away.gone_away_z", 3, None, 3.0),
    ("detection.went_away.drop_alpha", 0.02, None, 0.02),
    ("detection.went_away.normal_tail_ratio", [0.7, 1.4], None, (0.7, 1.4)),
    ("detection.went_away.day", "12h", "detection.went_away.day_s", 12 * HOUR),
    ("detection.went_away.periods", "1d", "detection.went_away.periods_s", (DAY,)),
    ("detection.went_away.acf_alpha", 0.02, None, 0.02),
    ("detection.seasonality.acf_alpha", 0.05, None, 0.05),
    (
        "detection.seasonality.periods",
        ["12h", "7d"],
        "detection.seasonality.periods_s",
        (12 * HOUR, 7 * DAY),
    ),
    ("detection.seasonality.z_threshold", "2.5", None, 2.5),
    ("detection.long_term.enabled", False, None, False),
    ("detection.long_term.analysis", "3d", "detection.long_term.analysis_s", 3 * DAY),
    ("detection.long_term.edge_share", 0.25, None, 0.25),
    ("detection.long_term.rmse_threshold", 0.2, None, 0.2),
    ("detection.long_term.z", 3, None, 3.0),
    ("detection.fleet_load.enabled", False, None, False),
    ("detection.fleet_load.min_series", 10, None, 10),
    ("detection.fleet_load.min_history", 24, None, 24),
    ("detection.fleet_load.max_rows", 100, None, 100),
    ("detection.fleet_load.iterations", 0, None, 0),
    ("detection.fleet_load.huber_k", 1.5, None, 1.5),
    ("detection.fleet_load.min_t", 7, None, 7.0),
    ("detection.partition_series", 5000, None, 5000),
    ("dedup.method", "kdd18", None, "kdd18"),
    ("dedup.merge_gap", "4h", "dedup.merge_gap_s", 4 * HOUR),
    ("dedup.merge_alpha", "1e-3", None, 0.001),
    ("dedup.merge_min_points", 5, None, 5),
    ("dedup.seed", 7, None, 7),
    ("dedup.pairwise_max_gap", "90m", "dedup.pairwise_max_gap_s", 1.5 * HOUR),
    ("dedup.rules", [{"feature": "text", "threshold": 0.6}], None, (MergeRule("text", 0.6),)),
    ("dedup.combine", "any", None, "any"),
    ("dedup.kdd18_bucket", "5m", "dedup.kdd18_bucket_s", 300.0),
    ("dedup.kdd18_tolerance", 0.1, None, 0.1),
    ("dedup.kdd18_explained_share", 0.2, None, 0.2),
    ("dedup.kdd18_stack_weight", 0.25, None, 0.25),
    ("dedup.kdd18_relative_cap", 50, None, 50.0),
    ("dedup.som.weights.relative_change", 0.5, None, 0.5),
    ("dedup.som.weights.absolute_change", 0.4, None, 0.4),
    ("dedup.som.weights.popularity", 0, None, 0.0),
    ("dedup.som.weights.root_cause", 0.3, None, 0.3),
    ("dedup.som.block_weights.shape", 2, None, 2.0),
    ("dedup.som.block_weights.variance", 1, None, 1.0),
    ("dedup.som.block_weights.position", 4, None, 4.0),
    ("dedup.som.block_weights.root_cause", 0.5, None, 0.5),
    ("dedup.som.block_weights.metric", 0, None, 0.0),
    ("dedup.som.epochs", 10, None, 10),
    ("dedup.som.fourier_terms", 4, None, 4),
    ("dedup.som.evidence_alpha", 0.01, None, 0.01),
    ("dedup.som.min_noise_correlation", 0.2, None, 0.2),
    ("dedup.som.min_cross_correlation", -0.4, None, -0.4),
    ("dedup.som.rise_z", 2, None, 2.0),
    ("dedup.som.guard_points", 1, None, 1),
    ("dedup.som.load_min_series", 5, None, 5),
    ("dedup.som.merge_distance", 0.75, None, 0.75),
    ("dedup.som.cascade_buckets", 4, None, 4),
    ("dedup.som.relative_cap", 20, None, 20.0),
    ("dedup.pairwise.evidence_alpha", 0.02, None, 0.02),
    ("dedup.pairwise.cross_kind_correlation", 0.5, None, 0.5),
    ("dedup.pairwise.rise_z", 2.5, None, 2.5),
    ("dedup.pairwise.guard_points", 2, None, 2),
    ("dedup.pairwise.load_min_series", 8, None, 8),
    ("dedup.pairwise.cascade_containment", 0.9, None, 0.9),
    ("cost_shift.enabled", False, None, False),
    (
        "cost_shift.domains",
        [{"name": "serde", "regex": r"(json|proto)\."}],
        None,
        (CostShiftDomain("serde", r"(json|proto)\."),),
    ),
    ("cost_shift.domain_cost_ratio", 40, None, 40.0),
    ("cost_shift.negligible_share", 0.25, None, 0.25),
    ("cost_shift.alpha", 0.005, None, 0.005),
    ("cost_shift.fallen_alpha", 0.05, None, 0.05),
    ("cost_shift.new_share", 0.05, None, 0.05),
    ("cost_shift.same_time_mass", 0.95, None, 0.95),
    ("cost_shift.share_inflation", False, None, False),
    ("cost_shift.inflation_alpha", 0.05, None, 0.05),
    ("attribution.weights.gcpu_attribution", 0.6, None, 0.6),
    ("attribution.weights.text_similarity", 0.1, None, 0.1),
    ("attribution.weights.correlation", 0.3, None, 0.3),
    ("attribution.confidence_floor", 0.4, None, 0.4),
    ("attribution.top1_margin", 0.05, None, 0.05),
    ("attribution.max_candidates", 5, None, 5),
    ("attribution.scope", "stack", None, "stack"),
    ("attribution.fuzzy_floor", 80, None, 80.0),
    ("attribution.signal_kinds", ["flag", "rollout"], None, frozenset({"flag", "rollout"})),
    ("github.api_url", "https://ghe.example/api/v3", None, "https://ghe.example/api/v3"),
    ("github.token_env", "REGBOT_TOKEN", None, "REGBOT_TOKEN"),
    ("github.comments.enabled", False, None, False),
    ("github.comments.max_per_run", 2, None, 2),
    ("github.comments.min_confidence", "low", None, "low"),
    ("gate.fail_on", "never", None, "never"),
    ("gate.min_delta", "1e-4", None, 1e-4),
    ("gate.on_missing_baseline", "fail", None, "fail"),
    ("gate.name", "perf", None, "perf"),
    ("profiles.bucket", "10s", "profiles.bucket_s", 10.0),
    ("profiles.gcpu_floor", "2e-05", None, 2e-05),
    ("profiles.sample_type", "cpu", None, "cpu"),
    ("execution.engine", "dask", None, "dask"),
    ("execution.scheduler", "tcp://127.0.0.1:8786", None, "tcp://127.0.0.1:8786"),
    ("execution.workers", 3, None, 3),
    ("state", "db/state.sqlite", None, HERE / "db/state.sqlite"),
]
ONLY_VALUE = {"detection.engine"}  # one value accepted: the default


def written_file() -> dict[str, Any]:
    """The table as one regbot.yml document."""
    data: dict[str, Any] = {}
    for key, value, _, _ in TABLE:
        *sections, name = key.split(".")
        at = data
        for section in sections:
            at = at.setdefault(section, {})
        at[name] = value
    return data


def field_value(config: Config, path: str) -> object:
    value: object = config
    for part in path.split("."):
        if value is None:  # an optional section left out
            return None
        value = value.get(part) if isinstance(value, dict) else getattr(value, part)
    return value


def anchored(expected: object, folder: Path) -> object:
    if isinstance(expected, Path):
        return folder / expected.relative_to(HERE)
    if isinstance(expected, tuple) and expected and isinstance(expected[0], Path):
        return tuple(anchored(p, folder) for p in expected)
    return expected


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Config:
    folder = tmp_path_factory.mktemp("tree")
    (folder / "regbot.yml").write_text(yaml.safe_dump(written_file()), encoding="utf-8")
    return load_config(folder / "regbot.yml")


@pytest.mark.parametrize(("key", "written", "field", "expected"), TABLE, ids=[r[0] for r in TABLE])
def test_every_key_fills_its_stage_field(
    config: Config, key: str, written: object, field: str | None, expected: object
) -> None:
    folder = Path(str(config.source)).parent
    got = field_value(config, field or key)
    assert got == anchored(expected, folder)
    if key not in ONLY_VALUE:
        defaults = parse_config(None, source="regbot.yml", base_dir=folder)
        assert got != field_value(defaults, field or key), "the table writes a non-default value"


def test_the_table_covers_every_key_the_reader_accepts() -> None:
    """A key the reader accepts but the table lacks (or the other way round) fails here."""
    accepted = config_keys(Config)
    rows = [key for key, *_ in TABLE]
    assert sorted(set(rows) - set(accepted)) == []

    def covered(key: str) -> bool:
        return any(
            row == key
            or row.startswith((key + ".", key + "["))
            or key.startswith((row + ".", row + "["))
            for row in rows
        )

    assert [key for key in accepted if not covered(key)] == []


def test_the_sections_are_the_stages_own_dataclasses(config: Config) -> None:
    assert type(config.detection) is DetectionSettings
    assert type(config.dedup) is DedupSettings
    assert type(config.cost_shift) is CostShiftSettings
    assert type(config.attribution) is AttributionSettings
    assert isinstance(config.attribution, RankSettings)  # what the ranking reads
    assert Config().dedup == DedupSettings() and Config().cost_shift == CostShiftSettings()


def test_a_run_gets_its_workload_and_the_files_higher_is_better(config: Config) -> None:
    run = config.detection_for("w")
    assert run.workload == config.workloads["w"] and run.higher_is_better == frozenset({"qps"})
    assert config.detection == config.detection_for(None)
    assert config.detection.workload == DEFAULT_WORKLOAD  # the file keeps the built-in default
    assert {f.name for f in fields(run)} >= {"workload", "higher_is_better", "workers"}
    assert "workload" not in config_keys(Config) and "detection.workers" not in config_keys(Config)


def test_an_empty_rule_list_keeps_the_default_rules(tmp_path: Path) -> None:
    (tmp_path / "regbot.yml").write_text("dedup: {rules: []}\n", encoding="utf-8")
    assert load_config(tmp_path / "regbot.yml").dedup.rules == DedupSettings().rules
