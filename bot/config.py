"""``regbot.yml`` (SPEC §5): the ``Config`` tree and reading it.

One tree: ``detection``, ``dedup``, ``cost_shift`` and ``attribution`` are the stages' own
settings dataclasses (``regbot.detection.stage_settings``, ``regbot.attribution.attribute``),
with the paper's values as their defaults; the sections only the bot reads (repository,
sources, workloads, GitHub, the gate, profiles) are declared here. Every field says how the file
writes it by its type and a ``regbot.settings_fields`` marker; ``regbot.bot.config_reader``
walks the YAML by those declarations and holds the reading rules (keys, numbers, durations,
paths, messages naming the key and its line, workloads and their presets).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Literal

import yaml

from regbot.attribution.settings import AttributionSettings
from regbot.bot.config_reader import (
    Reader,
    ReadWith,
    default_workloads,
    read_section,
    read_workloads,
)
from regbot.bot.scrape_targets import ScrapeTarget, read_targets
from regbot.detection.presets import (
    WORKLOAD_PRESETS,
    MinPoints,
    Threshold,
    Windows,
    WorkloadSettings,
)
from regbot.detection.stage_settings import (
    CostShiftDomain,
    CostShiftSettings,
    DedupSettings,
    DetectionSettings,
    MergeRule,
)
from regbot.errors import InputError
from regbot.settings_fields import (
    NOT_IN_CONFIG,
    Count,
    DaskAddress,
    GitHubRepository,
    NonNegative,
    Positive,
    PositiveCount,
    Share,
    Url,
)

__all__ = [
    "CONFIG_NAME",
    "CommentPolicy",
    "Config",
    "ExecutionSettings",
    "CostShiftDomain",
    "GateSettings",
    "GitHubSettings",
    "MergeRule",
    "MinPoints",
    "ProfilesSettings",
    "PrometheusQuery",
    "PrometheusSource",
    "PyroscopeSource",
    "RepositorySettings",
    "ScrapeSource",
    "ScrapeTarget",
    "SourceSettings",
    "Threshold",
    "Windows",
    "WorkloadSettings",
    "load_config",
    "parse_config",
]

CONFIG_NAME = "regbot.yml"
FailOn = Literal["high-confidence", "any", "never"]
OnMissingBaseline = Literal["neutral", "fail", "pass"]
Confidence = Literal["high", "low"]


@dataclass(frozen=True, slots=True)
class RepositorySettings:
    """``path``: the git checkout whose commits are the candidates; ``github``: ``owner/name``
    where the PRs live (None: offline, no comments and no status)."""

    path: Path = Path(".")
    github: GitHubRepository | None = None


@dataclass(frozen=True, slots=True)
class PrometheusQuery:
    """One PromQL query; each series it returns becomes a series ``<name>{labels}`` of ``kind``."""

    name: str
    query: str
    kind: str = "metric"
    unit: str | None = None


@dataclass(frozen=True, slots=True)
class PrometheusSource:
    """A Prometheus server: range queries over the release window, ``step_s`` apart."""

    url: Url
    queries: tuple[PrometheusQuery, ...] = ()
    step_s: float = 60.0
    timeout_s: float = 30.0


@dataclass(frozen=True, slots=True)
class ScrapeSource:
    """Live CPU profiles pulled by ``regbot scrape`` from pprof HTTP endpoints into the sample
    store ``store``: every ``interval``, each target's ``/debug/pprof/profile?seconds=N``
    (``seconds``: the profile's length). An answer may take ``seconds`` + ``timeout``
    (``timeout`` is also the connect timeout); a failed connection or a 5xx/429 answer is tried
    again ``retries`` times. Targets are URLs or ``{name, url}`` (``bot/scrape_targets.py``).
    The targets' profiles share one store (one config is one service: its replicas' samples
    pooled, as gCPU is a fleet share); ``regbot run`` reads that store as its profiles when
    ``sources.profiles`` is not set."""

    targets: Annotated[tuple[ScrapeTarget, ...], ReadWith(read_targets)] = ()
    seconds: PositiveCount = 10
    interval_s: Positive = 60.0
    timeout_s: Positive = 10.0
    retries: int = 2
    store: Path = Path(".regbot/scraped")


@dataclass(frozen=True, slots=True)
class PyroscopeSource:
    """Grafana Pyroscope's query API as a profile source: ``query`` (a Pyroscope query,
    ``process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="checkout"}``) rendered as
    flamebearer JSON once per ``step`` of the run's window (each step one time bucket of the
    gCPU series), through ``path`` (``/pyroscope/render``; ``/render`` before Pyroscope 1.0),
    at most ``max_nodes`` nodes per answer, ``timeout`` to connect and for each read."""

    url: Url
    query: str
    step_s: Positive = 600.0
    timeout_s: Positive = 30.0
    max_nodes: PositiveCount = 16384
    path: str = "/pyroscope/render"


@dataclass(frozen=True, slots=True)
class SourceSettings:
    """Where series come from: §3 profiles (files, folders, or a store from ``regbot ingest``),
    §2 series files or folders, and Prometheus. One path or a list of them. ``scrape`` and
    ``pyroscope``: live profiles (``ScrapeSource``, ``PyroscopeSource``)."""

    profiles: tuple[Path, ...] = ()
    series: tuple[Path, ...] = ()
    prometheus: PrometheusSource | None = None
    scrape: ScrapeSource | None = None
    pyroscope: PyroscopeSource | None = None


@dataclass(frozen=True, slots=True)
class CommentPolicy:
    """PR comments: at most ``max_per_run`` per run, only for regressions whose attribution
    confidence is at least ``min_confidence``."""

    enabled: bool = True
    max_per_run: int = 5
    min_confidence: Confidence = "high"


@dataclass(frozen=True, slots=True)
class GitHubSettings:
    """``token_env`` names the environment variable holding the token (never the token itself)."""

    api_url: Url = "https://api.github.com"
    token_env: str = "GITHUB_TOKEN"
    comments: CommentPolicy = CommentPolicy()


@dataclass(frozen=True, slots=True)
class GateSettings:
    """The gate (a commit status named ``name``): it fails on any reported regression (the
    default: a regression's size and evidence decide, not whom attribution could name), on
    high-confidence ones only, or never; regressions with ``|delta| < min_delta`` (the series'
    unit) are ignored; ``on_missing_baseline`` is the state when there is no historical data."""

    fail_on: FailOn = "any"
    min_delta: NonNegative = 0.0
    on_missing_baseline: OnMissingBaseline = "neutral"
    name: str = "regbot/performance"


@dataclass(frozen=True, slots=True)
class ProfilesSettings:
    """gCPU series from profiles: time bucket width, triviality floor (a share: 0.00001 is
    SPEC §3's 0.001%), and pprof's sample type (None: the first)."""

    bucket_s: float = 60.0
    gcpu_floor: Share = 0.00001
    sample_type: str | None = None


ExecutionEngine = Literal["local", "processes", "dask"]


@dataclass(frozen=True, slots=True)
class ExecutionSettings:
    """Where detection's partitions run (``regbot.bot.execution``): ``local`` in this process,
    ``processes`` in a pool of ``workers`` processes on this machine, ``dask`` on a Dask
    cluster: the one at ``scheduler`` (``tcp://host:8786``), else a local cluster of
    ``workers`` processes started for the run. ``workers`` 0: one per core. The report is the
    same whichever engine runs it."""

    engine: ExecutionEngine = "local"
    scheduler: DaskAddress | None = None
    workers: Count = 0


@dataclass(frozen=True, slots=True)
class Config:
    """Everything ``regbot.yml`` can say; ``source`` is the file it came from. ``detection``
    holds the default workload and ``higher_is_better`` once read (``detection_for``)."""

    repository: RepositorySettings = RepositorySettings()
    sources: SourceSettings = SourceSettings()
    workloads: Annotated[Mapping[str, WorkloadSettings], ReadWith(read_workloads)] = field(
        default_factory=default_workloads
    )
    higher_is_better: frozenset[str] = frozenset({"throughput", "qps"})
    detection: DetectionSettings = DetectionSettings()
    dedup: DedupSettings = DedupSettings()
    cost_shift: CostShiftSettings = CostShiftSettings()
    attribution: AttributionSettings = AttributionSettings()
    github: GitHubSettings = GitHubSettings()
    gate: GateSettings = GateSettings()
    profiles: ProfilesSettings = ProfilesSettings()
    execution: ExecutionSettings = ExecutionSettings()
    state: Path = Path(".regbot/state.db")
    source: Annotated[str | None, NOT_IN_CONFIG] = None

    def workload(self, name: str = "default") -> WorkloadSettings:
        """The workload ``--workload`` names: one from the file, else a Table 1 preset."""
        if name in self.workloads:
            return self.workloads[name]
        if name in WORKLOAD_PRESETS:
            return WORKLOAD_PRESETS[name]
        known = sorted(set(self.workloads) | set(WORKLOAD_PRESETS))
        raise InputError("--workload", "one of " + ", ".join(known), name)

    def detection_for(self, workload: str | None = None) -> DetectionSettings:
        """The detection settings of a run of the named workload (``default`` when None), with
        the file's ``higher_is_better``."""
        return replace(
            self.detection,
            workload=self.workload(workload or "default"),
            higher_is_better=self.higher_is_better,
        )


def load_config(path: Path | None, *, search_dir: Path | None = None) -> Config:
    """Read ``path``; with None, ``regbot.yml`` in ``search_dir`` (default: the current
    directory) if there is one, else the defaults."""
    if path is None:
        folder = (search_dir or Path.cwd()).absolute()
        if not (folder / CONFIG_NAME).is_file():
            return parse_config(None, source=CONFIG_NAME, base_dir=folder)
        path = folder / CONFIG_NAME
    data, lines = _read_yaml(path)
    return parse_config(data, source=str(path), base_dir=Path(path).absolute().parent, lines=lines)


def parse_config(
    data: object, *, source: str, base_dir: Path, lines: Mapping[str, int] | None = None
) -> Config:
    """A Config from YAML data (what ``yaml.safe_load`` returns). ``source`` names the file in
    messages, ``base_dir`` anchors relative paths, ``lines`` maps dotted key paths to lines."""
    reader = Reader(source, base_dir, lines or {})
    config = read_section(reader, Config, data, "", source=source)
    execution = config.execution
    if execution.scheduler is not None and execution.engine != "dask":
        raise InputError(
            reader.where("execution.scheduler"),
            "a scheduler only with execution.engine: dask",
            f"engine {execution.engine}",
        )
    return replace(config, detection=config.detection_for())


def _read_yaml(path: Path) -> tuple[object, dict[str, int]]:
    """The YAML data of ``path`` and the line of every dotted key in it."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError(str(path), "an existing configuration file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(str(path), "a readable UTF-8 configuration file", str(error)) from None
    try:
        lines = _key_lines(yaml.compose(text, Loader=yaml.SafeLoader), str(path))
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = getattr(error, "problem", None) or str(error)
        raise InputError(where, f"valid YAML ({problem})") from None
    return data, lines


def _key_lines(node: yaml.Node | None, source: str, key: str = "") -> dict[str, int]:
    """Line (1-based) of every dotted key path in a composed YAML document. A key written twice
    in one mapping is an error (``yaml.safe_load`` would silently keep the last)."""
    lines: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            child = f"{key}.{key_node.value}" if key else str(key_node.value)
            line = key_node.start_mark.line + 1
            if child in lines:
                raise InputError(f"{source}:{line}: {child}: duplicate key", "each key once")
            lines[child] = line
            lines.update(_key_lines(value_node, source, child))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[f"{key}[{i}]"] = item.start_mark.line + 1
            lines.update(_key_lines(item, source, f"{key}[{i}]"))
    return lines
