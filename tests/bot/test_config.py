"""Tests of the `regbot.yml` reader (SPEC §5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from regbot.bot.config import (
    Config,
    CostShiftDomain,
    PrometheusQuery,
    Threshold,
    Windows,
    load_config,
    parse_config,
)
from regbot.detection.presets import DEFAULT_WORKLOAD, WORKLOAD_PRESETS, MinPoints, WorkloadSettings
from regbot.errors import InputError

# Copied verbatim from SPEC §5.
SPEC_EXAMPLE = """\
repository:
  path: .                    # the local git checkout whose commits are the candidates
  github: owner/name         # where PRs live; leave out for offline use
sources:
  profiles: [profiles/]      # §3 files, folders of them, or a store made by `regbot ingest`
  series: [metrics/]         # §2 files or folders of them
workloads:
  default:                   # `--workload` picks one; `default` is used otherwise
    threshold: {absolute: 0.0001}          # or {relative: 0.05}
    windows: {historical: 10d, analysis: 4h, extended: 6h}
state: .regbot/state.db      # where regressions, dedup groups and posted comments are kept
"""

HOUR = 3600.0
DAY = 86400.0


def write_config(folder: Path, text: str, name: str = "regbot.yml") -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def load_text(folder: Path, text: str) -> Config:
    return load_config(write_config(folder, text))


def error_for(folder: Path, text: str) -> str:
    with pytest.raises(InputError) as caught:
        load_text(folder, text)
    return str(caught.value)


def assert_defaults(config: Config, base: Path) -> None:
    """Every setting at its default, paths anchored at ``base``."""
    defaults = Config()
    assert config.repository.path == base
    assert config.repository.github is None
    assert config.sources == defaults.sources
    assert dict(config.workloads) == {"default": DEFAULT_WORKLOAD}
    assert config.higher_is_better == frozenset({"throughput", "qps"})
    for name in ("dedup", "cost_shift", "attribution", "github", "gate", "profiles"):
        assert getattr(config, name) == getattr(defaults, name)
    assert config.state == base / ".regbot" / "state.db"


# --- empty and missing files ------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "\n# only a comment\n", "null\n", "~\n", "---\n"])
def test_empty_or_null_file_gives_the_defaults(tmp_path: Path, text: str) -> None:
    config = load_text(tmp_path, text)
    assert_defaults(config, tmp_path)
    assert config.source == str(tmp_path / "regbot.yml")


def test_no_file_gives_the_defaults_anchored_at_the_search_dir(tmp_path: Path) -> None:
    assert_defaults(load_config(None, search_dir=tmp_path), tmp_path)


def test_no_path_reads_regbot_yml_in_the_search_dir(tmp_path: Path) -> None:
    write_config(tmp_path, "gate: {fail_on: never}\n")
    assert load_config(None, search_dir=tmp_path).gate.fail_on == "never"


def test_no_path_uses_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write_config(tmp_path, "state: here.db\n")
    assert load_config(None).state == tmp_path / "here.db"


def test_missing_file_is_an_input_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "absent.yml"
    with pytest.raises(InputError, match="absent.yml: expected an existing configuration file"):
        load_config(path)


def test_defaults_dataclass_matches_the_spec() -> None:
    defaults = Config()
    assert defaults.profiles.gcpu_floor == 0.00001  # SPEC §3: 0.001% gCPU
    assert defaults.profiles.bucket_s == 60.0
    assert defaults.higher_is_better == frozenset({"throughput", "qps"})
    assert defaults.state == Path(".regbot/state.db")
    assert defaults.gate.on_missing_baseline == "neutral"


# --- the SPEC §5 example --------------------------------------------------------------------------


def test_spec_example_parses_with_its_meaning(tmp_path: Path) -> None:
    config = load_text(tmp_path, SPEC_EXAMPLE)
    assert config.repository.path == tmp_path
    assert config.repository.github == "owner/name"
    assert config.sources.profiles == (tmp_path / "profiles",)
    assert config.sources.series == (tmp_path / "metrics",)
    assert config.sources.prometheus is None
    default = config.workloads["default"]
    assert default.threshold == Threshold("absolute", 0.0001)
    assert default.windows == Windows(10 * DAY, 4 * HOUR, 6 * HOUR)
    assert config.workload() == default
    assert config.state == tmp_path / ".regbot" / "state.db"


def test_spec_example_equals_the_built_in_default_workload(tmp_path: Path) -> None:
    assert load_text(tmp_path, SPEC_EXAMPLE).workloads["default"] == DEFAULT_WORKLOAD
    assert DEFAULT_WORKLOAD.rerun_interval_s == 2 * HOUR


def test_relative_threshold_as_in_the_spec_comment(tmp_path: Path) -> None:
    config = load_text(tmp_path, "workloads: {default: {threshold: {relative: 0.05}}}\n")
    assert config.workloads["default"].threshold == Threshold("relative", 0.05)
    assert config.workloads["default"].windows == DEFAULT_WORKLOAD.windows


# --- numbers, durations, paths ----------------------------------------------------------------


def test_yaml_reads_2e_05_as_text() -> None:
    import yaml

    assert yaml.safe_load("x: 2e-05") == {"x": "2e-05"}  # why `_number` accepts text


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("2e-05", 2e-05),
        ('"2e-05"', 2e-05),
        ("1.0e-4", 1e-4),
        ("0.0001", 0.0001),
        ("1", 1.0),
        ("' 3.5 '", 3.5),
        ("1_000", 1000.0),
    ],
)
def test_numbers_in_any_form_float_accepts(tmp_path: Path, written: str, expected: float) -> None:
    config = load_text(
        tmp_path,
        f"gate: {{min_delta: {written}}}\nworkloads: {{w: {{threshold: {{absolute: {written}}}}}}}\n",
    )
    assert config.gate.min_delta == expected
    assert config.workloads["w"].threshold == Threshold("absolute", expected)


@pytest.mark.parametrize("written", ["abc", ".inf", "nan", "true", "[1]", "-1"])
def test_bad_numbers_name_the_key_and_value(tmp_path: Path, written: str) -> None:
    message = error_for(tmp_path, f"gate:\n  min_delta: {written}\n")
    assert message.startswith(f"{tmp_path / 'regbot.yml'}:2: gate.min_delta: expected a")


def test_durations(tmp_path: Path) -> None:
    config = load_text(
        tmp_path,
        "workloads:\n  w:\n    windows: {historical: 2d, analysis: 90m, extended: 0}\n"
        "    rerun_interval: 30m\n"
        "profiles: {bucket: 90s}\ndedup: {merge_gap: 4h, pairwise_max_gap: 600}\n",
    )
    assert config.workloads["w"].windows == Windows(2 * DAY, 90 * 60.0, 0.0)
    assert config.workloads["w"].rerun_interval_s == 30 * 60.0
    assert config.profiles.bucket_s == 90.0
    assert config.dedup.merge_gap_s == 4 * HOUR
    assert config.dedup.pairwise_max_gap_s == 600.0


@pytest.mark.parametrize("extended", ["0", "0s", "0h", "0.0d"])
def test_extended_window_may_be_zero(tmp_path: Path, extended: str) -> None:
    config = load_text(tmp_path, f"workloads: {{w: {{windows: {{extended: {extended}}}}}}}\n")
    assert config.workloads["w"].windows.extended_s == 0.0


@pytest.mark.parametrize(
    ("key", "written"),
    [("analysis", "4x"), ("historical", "0s"), ("analysis", "-4h"), ("extended", "soon")],
)
def test_bad_duration_names_the_key(tmp_path: Path, key: str, written: str) -> None:
    message = error_for(tmp_path, f"workloads:\n  default:\n    windows:\n      {key}: {written}\n")
    assert f"regbot.yml:4: workloads.default.windows.{key}: expected a" in message
    assert "duration" in message
    assert repr(written) in message


def test_relative_paths_are_relative_to_the_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "conf"
    write_config(
        folder,
        "repository: {path: ../repo}\n"
        "sources: {profiles: profiles, series: [../metrics, /abs/series.csv]}\n"
        "state: state/db.sqlite\n",
    )
    monkeypatch.chdir(tmp_path)
    config = load_config(Path("conf/regbot.yml"))  # a relative config path, too
    assert config.repository.path == folder / "../repo"
    assert config.sources.profiles == (folder / "profiles",)
    assert config.sources.series == (folder / "../metrics", Path("/abs/series.csv"))
    assert config.state == folder / "state/db.sqlite"


def test_parse_config_anchors_at_base_dir_and_names_the_source(tmp_path: Path) -> None:
    config = parse_config({"sources": {"series": "m.csv"}}, source="inline", base_dir=tmp_path)
    assert config.sources.series == (tmp_path / "m.csv",)
    with pytest.raises(InputError, match=r"^inline: gate.min_delta: expected a number"):
        parse_config({"gate": {"min_delta": "x"}}, source="inline", base_dir=tmp_path)


# --- unknown keys and wrong types ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "key", "line", "expected"),
    [
        ("stat: x\n", "stat", 1, "repository, sources, workloads"),
        ("gate:\n  fial_on: any\n", "gate.fial_on", 2, "fail_on, min_delta"),
        (
            "workloads:\n  default:\n    windows:\n      analyss: 4h\n",
            "workloads.default.windows.analyss",
            4,
            "one of historical, analysis, extended",
        ),
        ("workloads:\n  w: {treshold: 1}\n", "workloads.w.treshold", 2, "preset, threshold"),
        (
            "workloads:\n  w:\n    threshold: {absolut: 1}\n",
            "workloads.w.threshold.absolut",
            3,
            "one of absolute, relative",
        ),
        (
            "cost_shift:\n  domains:\n    - name: io\n      regex: io\n      colour: red\n",
            "cost_shift.domains[0].colour",
            5,
            "one of name, regex",
        ),
        ("github:\n  comments:\n    max: 3\n", "github.comments.max", 3, "max_per_run"),
        (
            "sources:\n  prometheus:\n    url: http://p:9090\n    queries:\n"
            "      - {name: a, query: b, knd: cpu}\n",
            "sources.prometheus.queries[0].knd",
            5,
            "name, query, kind, unit",
        ),
    ],
)
def test_unknown_keys_are_named_with_their_full_path(
    tmp_path: Path, text: str, key: str, line: int, expected: str
) -> None:
    message = error_for(tmp_path, text)
    assert message.startswith(f"{tmp_path / 'regbot.yml'}:{line}: {key}: unknown key: expected ")
    assert expected in message


def test_unknown_key_message_reads_as_the_brief_asks() -> None:
    with pytest.raises(InputError) as caught:
        parse_config(
            {"workloads": {"default": {"windows": {"analyss": "4h"}}}},
            source="regbot.yml",
            base_dir=Path("/"),
        )
    assert str(caught.value) == (
        "regbot.yml: workloads.default.windows.analyss: unknown key: "
        "expected one of historical, analysis, extended, min_points"
    )


@pytest.mark.parametrize(
    ("text", "key", "expected", "found"),
    [
        ("repository: [a]\n", "repository", "a mapping", "['a']"),
        ("repository: {github: not a slug}\n", "repository.github", "owner/name", "'not a slug'"),
        ("sources: {series: 5}\n", "sources.series", "a non-empty string", "5"),
        ("sources: {series: [a, 5]}\n", "sources.series[1]", "a non-empty string", "5"),
        ("dedup: {method: magic}\n", "dedup.method", "one of fbdetect, kdd18", "'magic'"),
        (
            "dedup: {rules: [{feature: luck, threshold: 1}]}\n",
            "dedup.rules[0].feature",
            "one of",
            "'luck'",
        ),
        ("attribution: {max_candidates: 2.5}\n", "attribution.max_candidates", "a whole", "2.5"),
        (
            "attribution: {confidence_floor: 2}\n",
            "attribution.confidence_floor",
            "between 0 and 1",
            "2",
        ),
        (
            "gate: {fail_on: sometimes}\n",
            "gate.fail_on",
            "one of high-confidence, any, never",
            "'sometimes'",
        ),
        (
            "gate: {on_missing_baseline: 1}\n",
            "gate.on_missing_baseline",
            "one of neutral, fail, pass",
            "1",
        ),
        ("higher_is_better: [qps, 3]\n", "higher_is_better[1]", "a non-empty string", "3"),
        ("workloads: [a]\n", "workloads", "a mapping of workload names", "['a']"),
        (
            "workloads: {w: {preset: frontfaas}}\n",
            "workloads.w.preset",
            "one of frontfaas-large",
            "'frontfaas'",
        ),
        ("workloads: {w: {threshold: 0.1}}\n", "workloads.w.threshold", "a mapping", "0.1"),
        ("cost_shift: {domains: {name: a}}\n", "cost_shift.domains", "a list", "{'name': 'a'}"),
        (
            "cost_shift: {domains: [{name: a, regex: '(unclosed'}]}\n",
            "cost_shift.domains[0].regex",
            "a regular expression",
            "'(unclosed'",
        ),
        (
            "sources: {prometheus: {url: 'ftp://x'}}\n",
            "sources.prometheus.url",
            "an http",
            "'ftp://x'",
        ),
    ],
)
def test_wrong_types_name_key_expected_and_value(
    tmp_path: Path, text: str, key: str, expected: str, found: str
) -> None:
    message = error_for(tmp_path, text)
    assert f"regbot.yml:1: {key}: expected " in message
    assert expected in message
    assert message.endswith(f"found {found}")


@pytest.mark.parametrize(
    ("text", "where", "expected"),
    [
        ("workloads: {w: {threshold: {}}}\n", "workloads.w.threshold", "exactly one of absolute"),
        (
            "workloads: {w: {threshold: {absolute: 1, relative: 0.1}}}\n",
            "workloads.w.threshold",
            "exactly one of absolute, relative",
        ),
        ("sources: {prometheus: {queries: []}}\n", "sources.prometheus", "a value for url"),
        (
            "sources: {prometheus: {url: 'http://p', queries: [{name: a}]}}\n",
            "sources.prometheus.queries[0]",
            "a value for query",
        ),
        ("cost_shift: {domains: [{regex: x}]}\n", "cost_shift.domains[0]", "a value for name"),
        (
            "cost_shift: {domains: [{name: a, regex: x}, {name: a, regex: y}]}\n",
            "cost_shift.domains[1].name",
            "a name not used before",
        ),
    ],
)
def test_missing_and_conflicting_values(
    tmp_path: Path, text: str, where: str, expected: str
) -> None:
    message = error_for(tmp_path, text)
    assert f"regbot.yml:1: {where}: expected {expected}" in message


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    message = error_for(tmp_path, "- a\n- b\n")
    assert message.startswith(f"{tmp_path / 'regbot.yml'}: expected a mapping")


def test_non_text_key_is_an_error(tmp_path: Path) -> None:
    assert "gate.1: expected a key that is text" in error_for(tmp_path, "gate: {1: a}\n")


def test_null_values_keep_the_defaults(tmp_path: Path) -> None:
    config = load_text(tmp_path, "gate:\n  min_delta:\nrepository:\nsources: {series: ~}\n")
    assert_defaults(config, tmp_path)


# --- YAML syntax --------------------------------------------------------------------------------


def test_yaml_syntax_error_names_line_and_column(tmp_path: Path) -> None:
    message = error_for(tmp_path, "gate:\n  fail_on: any\n  min_delta: [1, 2\nstate: x\n")
    assert message.startswith(f"{tmp_path / 'regbot.yml'}:4:")
    assert "expected valid YAML" in message


def test_yaml_bad_indentation_names_its_line(tmp_path: Path) -> None:
    message = error_for(tmp_path, "gate:\n  fail_on: any\n   min_delta: 1\n")
    assert message.startswith(f"{tmp_path / 'regbot.yml'}:3:")


def test_duplicate_key_is_an_error_naming_its_line(tmp_path: Path) -> None:
    message = error_for(tmp_path, "gate:\n  fail_on: any\n  fail_on: never\n")
    assert message.startswith(f"{tmp_path / 'regbot.yml'}:3: gate.fail_on: duplicate key")


# --- workloads and presets --------------------------------------------------------------------


def test_preset_with_overrides(tmp_path: Path) -> None:
    config = load_text(
        tmp_path,
        "workloads:\n"
        "  fast:\n    preset: frontfaas-large\n    windows: {analysis: 2h}\n"
        "  supply:\n    preset: ct-supply-long\n    threshold: {absolute: 2e-05}\n"
        "    rerun_interval: 1h\n",
    )
    fast = config.workloads["fast"]
    assert fast == WorkloadSettings(
        Threshold("absolute", 0.03), Windows(10 * DAY, 2 * HOUR, 0.0), 30 * 60.0, "frontfaas-large"
    )
    supply = config.workloads["supply"]
    assert supply == WorkloadSettings(
        Threshold("absolute", 2e-05), Windows(10 * DAY, 7 * DAY, 1 * DAY), HOUR, "ct-supply-long"
    )
    assert config.workloads["default"] == DEFAULT_WORKLOAD  # still there


def test_workload_without_preset_starts_from_the_default(tmp_path: Path) -> None:
    config = load_text(tmp_path, "workloads: {slow: {windows: {historical: 14d}}}\n")
    assert config.workloads["slow"] == WorkloadSettings(
        DEFAULT_WORKLOAD.threshold, Windows(14 * DAY, 4 * HOUR, 6 * HOUR), 2 * HOUR
    )


def test_workload_lookup_falls_back_to_presets(tmp_path: Path) -> None:
    config = load_text(tmp_path, "workloads: {mine: {preset: invoicer-short}}\n")
    assert config.workload("mine").preset == "invoicer-short"
    assert config.workload("ct-demand") == WORKLOAD_PRESETS["ct-demand"]
    with pytest.raises(InputError, match=r"^--workload: expected one of .*mine.*found 'nope'$"):
        config.workload("nope")


# Table 1, by hand: threshold (share), mode, re-run, historical, analysis, extended.
TABLE_1 = {
    "frontfaas-large": (0.03, "absolute", 0.5 * HOUR, 10 * DAY, 3 * HOUR, 0.0),
    "frontfaas-small": (0.00005, "absolute", 2 * HOUR, 10 * DAY, 4 * HOUR, 6 * HOUR),
    "pythonfaas-large": (0.005, "absolute", 1 * HOUR, 10 * DAY, 6 * HOUR, 0.0),
    "pythonfaas-small": (0.0003, "absolute", 4 * HOUR, 10 * DAY, 6 * HOUR, 6 * HOUR),
    "tao-frontfaas": (0.0005, "absolute", 2 * HOUR, 10 * DAY, 4 * HOUR, 1 * DAY),
    "tao-non-frontfaas": (0.0005, "absolute", 1 * HOUR, 10 * DAY, 1 * DAY, 6 * HOUR),
    "adserving-short": (0.002, "absolute", 6 * HOUR, 10 * DAY, 1 * DAY, 12 * HOUR),
    "adserving-long": (0.001, "absolute", 1 * DAY, 16 * DAY, 9 * DAY, 0.0),
    "invoicer-short": (0.005, "absolute", 12 * HOUR, 14 * DAY, 1 * DAY, 1 * DAY),
    "ct-supply-short": (0.05, "relative", 12 * HOUR, 7 * DAY, 1 * DAY, 1 * DAY),
    "ct-supply-long": (0.05, "relative", 12 * HOUR, 10 * DAY, 7 * DAY, 1 * DAY),
    "ct-demand": (0.05, "relative", 12 * HOUR, 7 * DAY, 1 * DAY, 0.0),
}


def test_presets_are_fbdetect_table_1() -> None:
    assert set(WORKLOAD_PRESETS) == set(TABLE_1)
    for name, (threshold, mode, rerun, historical, analysis, extended) in TABLE_1.items():
        assert WORKLOAD_PRESETS[name] == WorkloadSettings(
            Threshold(mode, threshold), Windows(historical, analysis, extended), rerun, name
        ), name


# --- the other sections -----------------------------------------------------------------------


def test_full_file_with_every_section(tmp_path: Path) -> None:
    config = load_text(
        tmp_path,
        """\
sources:
  prometheus:
    url: http://prometheus:9090
    step: 30s
    queries:
      - {name: p99, query: 'histogram_quantile(0.99, rate(h[5m]))', kind: latency, unit: s}
      - {name: rps, query: 'sum(rate(r[5m]))', kind: qps}
higher_is_better: [throughput, qps, hit_rate]
dedup:
  merge_gap: 12h
  method: kdd18
  seed: 7
  combine: any
  rules: [{feature: correlation, threshold: 0.9}, {feature: stack_overlap, threshold: 0.6}]
cost_shift:
  negligible_share: 0.25
  domains:
    - {name: serialization, regex: '(json|proto)\\.'}
attribution:
  weights: {gcpu_attribution: 0.6, text_similarity: 0.1, correlation: 0.3}
  confidence_floor: 0.4
  top1_margin: 0.05
  max_candidates: 5
github:
  token_env: REGBOT_TOKEN
  comments: {max_per_run: 2, min_confidence: low}
gate: {fail_on: any, min_delta: 1e-4, on_missing_baseline: pass, name: perf}
profiles: {bucket: 10s, gcpu_floor: 2e-05, sample_type: cpu}
""",
    )
    prometheus = config.sources.prometheus
    assert prometheus is not None
    assert prometheus.url == "http://prometheus:9090"
    assert prometheus.step_s == 30.0
    assert prometheus.timeout_s == 30.0
    assert prometheus.queries == (
        PrometheusQuery("p99", "histogram_quantile(0.99, rate(h[5m]))", "latency", "s"),
        PrometheusQuery("rps", "sum(rate(r[5m]))", "qps", None),
    )
    assert config.higher_is_better == frozenset({"throughput", "qps", "hit_rate"})
    assert (config.dedup.merge_gap_s, config.dedup.method, config.dedup.seed) == (
        12 * HOUR,
        "kdd18",
        7,
    )
    assert [(r.feature, r.threshold) for r in config.dedup.rules] == [
        ("correlation", 0.9),
        ("stack_overlap", 0.6),
    ]
    assert config.dedup.combine == "any"
    assert config.dedup.pairwise_max_gap_s == 6 * HOUR  # default kept
    assert config.cost_shift.negligible_share == 0.25
    assert config.cost_shift.domains == (CostShiftDomain("serialization", r"(json|proto)\."),)
    assert config.attribution.weights.gcpu_attribution == 0.6
    assert config.attribution.confidence_floor == 0.4
    assert config.attribution.top1_margin == 0.05
    assert config.attribution.max_candidates == 5
    assert config.github.token_env == "REGBOT_TOKEN"
    assert config.github.api_url == "https://api.github.com"
    assert (config.github.comments.max_per_run, config.github.comments.min_confidence) == (2, "low")
    assert config.github.comments.enabled is True
    assert (config.gate.fail_on, config.gate.min_delta) == ("any", 1e-4)
    assert (config.gate.on_missing_baseline, config.gate.name) == ("pass", "perf")
    assert config.profiles.bucket_s == 10.0
    assert config.profiles.gcpu_floor == 2e-05
    assert config.profiles.sample_type == "cpu"


def test_higher_is_better_may_be_emptied(tmp_path: Path) -> None:
    assert load_text(tmp_path, "higher_is_better: []\n").higher_is_better == frozenset()


def test_settings_are_frozen(tmp_path: Path) -> None:
    config = load_text(tmp_path, SPEC_EXAMPLE)
    with pytest.raises(AttributeError):
        config.state = Path("x")  # type: ignore[misc]


def test_window_min_points_are_read_field_by_field(tmp_path: Path) -> None:
    config = load_text(
        tmp_path,
        "workloads:\n"
        "  builds:\n"
        "    windows: {historical: 1m, analysis: 1m, extended: 1m,\n"
        "              min_points: {historical: 120, analysis: 6, extended: 6}}\n"
        "  partly:\n"
        "    preset: frontfaas-small\n"
        "    windows: {min_points: {analysis: 12}}\n",
    )
    builds = config.workloads["builds"].windows
    assert builds == Windows(60.0, 60.0, 60.0, MinPoints(historical=120, analysis=6, extended=6))
    partly = config.workloads["partly"].windows
    assert partly.min_points == MinPoints(historical=12, analysis=12, extended=6)
    assert partly.historical_s == WORKLOAD_PRESETS["frontfaas-small"].windows.historical_s
    assert config.workloads["default"].windows.min_points == MinPoints(12, 6, 6)


@pytest.mark.parametrize(
    ("written", "expected"),
    [("0", "a whole number >= 1"), ("2.5", "a whole number >= 0"), ("{a: 1}", "a number")],
)
def test_bad_min_points_name_the_key(tmp_path: Path, written: str, expected: str) -> None:
    message = error_for(
        tmp_path, f"workloads:\n  w:\n    windows:\n      min_points: {{extended: {written}}}\n"
    )
    assert "workloads.w.windows.min_points.extended: expected " + expected in message


def test_unknown_min_points_key_is_named(tmp_path: Path) -> None:
    message = error_for(tmp_path, "workloads:\n  w:\n    windows: {min_points: {history: 9}}\n")
    assert "workloads.w.windows.min_points.history: unknown key" in message
    assert "historical, analysis, extended" in message
