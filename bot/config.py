"""The `regbot.yml` reader (SPEC §5): YAML in, a frozen ``Config`` out, every key checked here.

Rules, fixed here once:

* Every field has a default, so an empty file, a file holding only ``null``, or no file at all
  is valid. A key written with no value (``gate:`` or ``min_delta: null``) keeps its default.
* Unknown keys are an ``InputError`` naming the full dotted key path and the keys expected there;
  wrong types name the key, the expected type and the value. Errors carry the line of the key
  when the YAML gives one (``regbot.yml:12: gate.min_delta: expected a number, found 'abc'``).
* Numbers may be written in any form Python's ``float()`` accepts, text included: YAML 1.1 reads
  ``2e-05`` as a string. Durations are ``90s``, ``30m``, ``4h``, ``10d`` (or plain seconds).
* Relative paths are relative to the directory of the config file (of the current directory
  when there is no file). ``~`` is expanded.
* Workloads: the built-in ``default`` is always there (the SPEC §5 example: absolute 0.0001,
  10d / 4h / 6h, re-run every 2h); entries under ``workloads:`` add workloads or replace it. A
  workload starts from its ``preset`` (a row of FBDetect Table 1, see ``presets.py``) or else
  from the built-in default, and overrides what it writes: ``threshold`` as a whole (exactly one
  of ``absolute`` / ``relative``), ``windows`` field by field, ``rerun_interval``.
* The dataclasses store what was read, unchanged; nothing validates them again.
* The detection, dedup and cost-shift constants take their defaults from the stages' own
  settings dataclasses (``regbot.detection.stage_settings``), never from a second copy here; only
  the scalar fields of ``detection.dedup.DedupSettings`` (the same-regression merge's
  ``merge_gap``, ``merge_alpha``, ``merge_min_points`` and the KDD'18 method's ``kdd18_*``) are
  written out, as that module is slow to import, and a test holds them equal.

Each settings field declares its YAML key (the field name without a unit suffix such as ``_s``)
and its converter next to its default, so the schema is read in one place; one generic walk
(``_read_section``) applies it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, TypeVar, cast, get_args

import yaml

from regbot.detection import stage_settings as stages
from regbot.detection.presets import (
    DEFAULT_WORKLOAD,
    HOUR_S,
    WORKLOAD_PRESETS,
    MinPoints,
    Threshold,
    ThresholdMode,
    Windows,
    WorkloadSettings,
)
from regbot.detection.share_inflation import ShareInflationSettings
from regbot.errors import InputError
from regbot.timefmt import parse_duration

CONFIG_NAME = "regbot.yml"
FailOn = Literal["high-confidence", "any", "never"]
OnMissingBaseline = Literal["neutral", "fail", "pass"]
Confidence = Literal["high", "low"]
T = TypeVar("T")
Read = Callable[["_Reader", object, str], Any]


class _Reader:
    """Where messages point (``file:line: dotted.key``), and what relative paths are anchored to."""

    def __init__(self, source: str, base_dir: Path, lines: Mapping[str, int]) -> None:
        self.source = source
        self.base_dir = base_dir
        self.lines = lines

    def where(self, key: str) -> str:
        line = self.lines.get(key)
        return f"{self.source}:{line}: {key}" if line else f"{self.source}: {key}"

    def section(self, value: object, key: str, allowed: tuple[str, ...]) -> dict[str, object]:
        """A mapping with only ``allowed`` keys (None counts as empty)."""
        if value is None:
            return {}
        if not isinstance(value, dict):
            where = self.where(key) if key else self.source
            raise InputError(where, "a mapping (key: value)", value)
        for name in value:
            child = f"{key}.{name}" if key else str(name)
            if not isinstance(name, str):
                raise InputError(self.where(child), "a key that is text", name)
            if name not in allowed:
                expected = "one of " + ", ".join(allowed)
                raise InputError(f"{self.where(child)}: unknown key", expected)
        return value

    def take(
        self,
        mapping: Mapping[str, object],
        key: str,
        name: str,
        convert: Callable[[object, str], T],
        default: T,
    ) -> T:
        """``mapping[name]`` converted, or ``default`` when absent or null."""
        value = mapping.get(name)
        if value is None:
            return default
        return convert(value, self.where(f"{key}.{name}" if key else name))

    def path(self, value: object, key: str) -> Path:
        """A path, a relative one anchored at the config file's directory."""
        return self.base_dir / Path(_text(value, self.where(key))).expanduser()

    def paths(self, value: object, key: str) -> tuple[Path, ...]:
        """One path or a list of them."""
        if not isinstance(value, list):
            return (self.path(value, key),)
        return tuple(self.path(item, f"{key}[{i}]") for i, item in enumerate(value))


# --- scalar converters: (value, where) -> value -------------------------------------------------


def _number(value: object, where: str) -> float:
    """A finite number from a YAML number or any text ``float()`` accepts (``2e-05``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InputError(where, "a number", value)
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (ValueError, OverflowError):
        raise InputError(where, "a number", value) from None
    if not math.isfinite(number):
        raise InputError(where, "a finite number", value)
    return number


def _bounded(allowed: Callable[[float], bool], expected: str) -> Callable[[object, str], float]:
    """A converter of numbers that ``allowed`` accepts; ``expected`` is what the error says."""

    def convert(value: object, where: str) -> float:
        number = _number(value, where)
        if not allowed(number):
            raise InputError(where, expected, value)
        return number

    return convert


_non_negative = _bounded(lambda x: x >= 0, "a number >= 0")
_share = _bounded(lambda x: 0 <= x <= 1, "a number between 0 and 1")
_probability = _bounded(lambda x: 0 < x < 1, "a number between 0 and 1 (exclusive)")
_positive = _bounded(lambda x: x > 0, "a number > 0")
_percentile = _bounded(lambda x: 0 <= x <= 100, "a percentile between 0 and 100")
_correlation = _bounded(lambda x: -1 <= x <= 1, "a correlation between -1 and 1")


def _count(value: object, where: str) -> int:
    """A whole number >= 0 (``5``, ``5.0`` and ``"5"`` alike)."""
    number = _number(value, where)
    if number < 0 or number != int(number):
        raise InputError(where, "a whole number >= 0", value)
    return int(number)


def _boolean(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise InputError(where, "true or false", value)
    return value


def _text(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(where, "a non-empty string", value)
    return value


def _words(value: object, where: str) -> frozenset[str]:
    """One word or a list of them."""
    if not isinstance(value, list):
        return frozenset({_text(value, where)})
    return frozenset(_text(item, f"{where}[{i}]") for i, item in enumerate(value))


def _percent(value: object, where: str) -> float:
    number = _non_negative(value, where)
    if number > 100:
        raise InputError(where, "a score from 0 to 100", value)
    return number





def _one_of(value: object, where: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise InputError(where, "one of " + ", ".join(choices), value)
    return value


def _fail_on(value: object, where: str) -> FailOn:
    return cast(FailOn, _one_of(value, where, get_args(FailOn)))


def _on_missing_baseline(value: object, where: str) -> OnMissingBaseline:
    return cast(OnMissingBaseline, _one_of(value, where, get_args(OnMissingBaseline)))


def _confidence(value: object, where: str) -> Confidence:
    return cast(Confidence, _one_of(value, where, get_args(Confidence)))


def _duration(value: object, where: str) -> float:
    """A positive duration: ``90s``, ``30m``, ``4h``, ``10d`` or seconds."""
    return parse_duration(value, where)


_ZERO = re.compile(r"^\s*0+(?:\.0*)?\s*(?:ms|s|m|h|d|w)?\s*$")


def _duration_or_zero(value: object, where: str) -> float:
    """A duration that may be 0 (``0``, ``0s``, ``0h``...), for the optional extended window."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0:
        return 0.0
    if isinstance(value, str) and _ZERO.match(value):
        return 0.0
    return parse_duration(value, where)


def _regex(value: object, where: str) -> str:
    text = _text(value, where)
    try:
        re.compile(text)
    except re.error as error:
        raise InputError(where, f"a regular expression ({error.msg})", text) from None
    return text


def _url(value: object, where: str) -> str:
    text = _text(value, where)
    if not text.startswith(("http://", "https://")):
        raise InputError(where, "an http:// or https:// URL", text)
    return text


def _github_repository(value: object, where: str) -> str:
    text = _text(value, where)
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", text):
        raise InputError(where, "owner/name", text)
    return text


# --- field declarations ---------------------------------------------------------------------


MERGE_FEATURES = ("correlation", "text", "stack_overlap")
GCPU_SCOPES = ("informative", "downstream", "stack")
DEDUP_METHODS = ("fbdetect", "kdd18")


def _setting(default: object, convert: Callable[[object, str], object]) -> Any:
    """A field read by ``convert(value, where)``; its YAML key is the field name without its
    unit suffix (``merge_gap_s`` is written ``merge_gap``)."""
    read: Read = lambda r, value, at: convert(value, r.where(at))  # noqa: E731
    return field(default=default, metadata={"read": read})


def _required(convert: Callable[[object, str], object]) -> Any:
    read: Read = lambda r, value, at: convert(value, r.where(at))  # noqa: E731
    return field(metadata={"read": read})


def _path(default: str) -> Any:
    """A path field; its default, like any relative path written, is anchored at the config
    file's directory."""
    return field(default=Path(default), metadata={"read": _Reader.path})


def _paths() -> Any:
    return field(default=(), metadata={"read": _Reader.paths})


def _nested(cls: type, *, optional: bool = False) -> Any:
    """A nested section (a settings dataclass), read even when not written so that its paths
    are anchored; ``optional``: None when not written."""
    read: Read = lambda r, value, at: _read_section(r, cls, value, at)  # noqa: E731
    default = None if optional else cls()
    return field(default=default, metadata={"read": read, "always": not optional})


def _named_list(cls: type) -> Any:
    """A list of nested sections, each with a distinct ``name``."""

    def read(r: _Reader, value: object, key: str) -> tuple[Any, ...]:
        if not isinstance(value, list):
            raise InputError(r.where(key), "a list", value)
        items = tuple(_read_section(r, cls, item, f"{key}[{i}]") for i, item in enumerate(value))
        names = [item.name for item in items]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise InputError(r.where(f"{key}[{i}].name"), "a name not used before", name)
        return items

    return field(default=(), metadata={"read": read})


def _section_list(cls: type) -> Any:
    """A list of nested sections."""

    def read(r: _Reader, value: object, key: str) -> tuple[Any, ...]:
        if not isinstance(value, list):
            raise InputError(r.where(key), "a list", value)
        return tuple(_read_section(r, cls, item, f"{key}[{i}]") for i, item in enumerate(value))

    return field(default=(), metadata={"read": read})


def _read_section(r: _Reader, cls: type[T], value: object, key: str, **given: object) -> T:
    """Build ``cls`` from a YAML mapping by its fields' declarations; absent or null keys keep
    the field's default; ``given`` fills fields that are not YAML keys."""
    declared = {
        f.name.removesuffix("_s"): f
        for f in fields(cls)  # type: ignore[arg-type]
        if "read" in f.metadata
    }
    mapping = r.section(value, key, tuple(declared))
    for name, f in declared.items():
        child = f"{key}.{name}" if key else name
        item = mapping.get(name)
        if item is not None or f.metadata.get("always"):
            given[f.name] = f.metadata["read"](r, item, child)
        elif f.default is MISSING and f.default_factory is MISSING:
            raise InputError(r.where(key), f"a value for {name}")
        elif isinstance(f.default, Path):
            given[f.name] = r.base_dir / f.default
    return cls(**given)


# --- workloads: presets and the built-in default as the base of each --------------------------


def _workloads(r: _Reader, value: object, key: str) -> dict[str, WorkloadSettings]:
    if not isinstance(value, dict):
        raise InputError(r.where(key), "a mapping of workload names to settings", value)
    workloads = _default_workloads()
    for name, settings in value.items():
        if not isinstance(name, str) or not name:
            raise InputError(r.where(f"{key}.{name}"), "a workload name (text)", name)
        workloads[name] = _workload(r, settings, f"{key}.{name}")
    return workloads


def _default_workloads() -> dict[str, WorkloadSettings]:
    return {"default": DEFAULT_WORKLOAD}


def _workload(r: _Reader, value: object, key: str) -> WorkloadSettings:
    d = r.section(value, key, ("preset", "threshold", "windows", "rerun_interval"))
    preset = r.take(d, key, "preset", lambda v, w: _one_of(v, w, tuple(WORKLOAD_PRESETS)), None)
    base = WORKLOAD_PRESETS[preset] if preset else DEFAULT_WORKLOAD
    threshold = d.get("threshold")
    at, at_threshold = f"{key}.windows", f"{key}.threshold"
    windows = r.section(
        d.get("windows"), at, ("historical", "analysis", "extended", "min_points")
    )
    return WorkloadSettings(
        threshold=base.threshold if threshold is None else _threshold(r, threshold, at_threshold),
        windows=Windows(
            historical_s=r.take(windows, at, "historical", _duration, base.windows.historical_s),
            analysis_s=r.take(windows, at, "analysis", _duration, base.windows.analysis_s),
            extended_s=r.take(windows, at, "extended", _duration_or_zero, base.windows.extended_s),
            min_points=_min_points(r, windows.get("min_points"), f"{at}.min_points", base),
        ),
        rerun_interval_s=r.take(d, key, "rerun_interval", _duration, base.rerun_interval_s),
        preset=preset,
    )


def _min_points(r: _Reader, value: object, key: str, base: WorkloadSettings) -> MinPoints:
    """``windows.min_points``: the fewest points per window (``{historical: 120, analysis: 6,
    extended: 6}``), field by field over the base workload's (12 / 6 / 6 by default); each a
    whole number >= 1, as a window always holds at least one point."""
    d = r.section(value, key, ("historical", "analysis", "extended"))
    given = base.windows.min_points
    return MinPoints(
        historical=r.take(d, key, "historical", _positive_count, given.historical),
        analysis=r.take(d, key, "analysis", _positive_count, given.analysis),
        extended=r.take(d, key, "extended", _positive_count, given.extended),
    )


def _positive_count(value: object, where: str) -> int:
    count = _count(value, where)
    if count < 1:
        raise InputError(where, "a whole number >= 1", value)
    return count


def _durations(value: object, where: str) -> tuple[float, ...]:
    """One duration or a non-empty list of them (``[1d, 7d]``)."""
    if not isinstance(value, list):
        return (_duration(value, where),)
    if not value:
        raise InputError(where, "a list of durations (at least one)", value)
    return tuple(_duration(item, f"{where}[{i}]") for i, item in enumerate(value))


def _band(value: object, where: str) -> tuple[float, float]:
    """Two numbers ``[low, high]``, 0 <= low <= high."""
    if not isinstance(value, list) or len(value) != 2:
        raise InputError(where, "a list of two numbers [low, high]", value)
    low, high = (_non_negative(item, f"{where}[{i}]") for i, item in enumerate(value))
    if low > high:
        raise InputError(where, "[low, high] with low <= high", value)
    return low, high



def _threshold(r: _Reader, value: object, key: str) -> Threshold:
    d = r.section(value, key, ("absolute", "relative"))
    given = [mode for mode in ("absolute", "relative") if d.get(mode) is not None]
    if len(given) != 1:
        raise InputError(r.where(key), "exactly one of absolute, relative", value)
    mode: ThresholdMode = "absolute" if given == ["absolute"] else "relative"
    return Threshold(mode, _non_negative(d[mode], r.where(f"{key}.{mode}")))


# --- the settings --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RepositorySettings:
    """``path``: the git checkout whose commits are the candidates; ``github``: ``owner/name``
    where the PRs live (None: offline, no comments and no status)."""

    path: Path = _path(".")
    github: str | None = _setting(None, _github_repository)


@dataclass(frozen=True, slots=True)
class PrometheusQuery:
    """One PromQL query; each series it returns becomes a series ``<name>{labels}`` of ``kind``."""

    name: str = _required(_text)
    query: str = _required(_text)
    kind: str = _setting("metric", _text)
    unit: str | None = _setting(None, _text)


@dataclass(frozen=True, slots=True)
class PrometheusSource:
    """A Prometheus server: range queries over the release window, ``step_s`` apart."""

    url: str = _required(_url)
    queries: tuple[PrometheusQuery, ...] = _named_list(PrometheusQuery)
    step_s: float = _setting(60.0, _duration)
    timeout_s: float = _setting(30.0, _duration)


@dataclass(frozen=True, slots=True)
class SourceSettings:
    """Where series come from: §3 profiles (files, folders, or a store from ``regbot ingest``),
    §2 series files or folders, and Prometheus. One path or a list of them."""

    profiles: tuple[Path, ...] = _paths()
    series: tuple[Path, ...] = _paths()
    prometheus: PrometheusSource | None = _nested(PrometheusSource, optional=True)


@dataclass(frozen=True, slots=True)
class MergeRuleSettings:
    """One PairwiseDedup rule: a feature (``correlation``, ``text`` or ``stack_overlap``) and the
    score it must reach."""

    feature: str = _required(lambda value, where: _one_of(value, where, MERGE_FEATURES))
    threshold: float = _required(_share)


# The stages' own defaults, read once: every detection, dedup and cost-shift default below is
# one of their fields.
_CHANGE_POINT = stages.ChangePointSettings()
_WENT_AWAY = stages.WentAwaySettings()
_SEASONALITY = stages.SeasonalitySettings()
_LONG_TERM = stages.LongTermSettings()
_FLEET_LOAD = stages.FleetLoadSettings()
_SOM = stages.SomSettings()
_PAIRWISE = stages.PairwiseSettings()
_COST_SHIFT = stages.CostShiftSettings()
_INFLATION = ShareInflationSettings()
MULTIPLE_TESTING = ("fdr", "none")


@dataclass(frozen=True, slots=True)
class ImportanceWeights:
    """SOMDedup's ImportanceScore weights (``SomSettings.weights``, in this order): relative
    change, absolute change, popularity (less widely invoked preferred), root cause found."""

    relative_change: float = _setting(_SOM.weights[0], _non_negative)
    absolute_change: float = _setting(_SOM.weights[1], _non_negative)
    popularity: float = _setting(_SOM.weights[2], _non_negative)
    root_cause: float = _setting(_SOM.weights[3], _non_negative)


@dataclass(frozen=True, slots=True)
class BlockWeights:
    """SOMDedup's feature-block weights (``SomSettings.block_weights``, in this order): the
    shape's Fourier magnitudes, the variance ratio, the change position, the root-cause bits and
    the metric id."""

    shape: float = _setting(_SOM.block_weights[0], _non_negative)
    variance: float = _setting(_SOM.block_weights[1], _non_negative)
    position: float = _setting(_SOM.block_weights[2], _non_negative)
    root_cause: float = _setting(_SOM.block_weights[3], _non_negative)
    metric: float = _setting(_SOM.block_weights[4], _non_negative)


@dataclass(frozen=True, slots=True)
class SomConfig:
    """SOMDedup (``regbot.detection.stage_settings.SomSettings``): the ImportanceScore weights,
    training epochs, Fourier magnitudes per series, and what a cell may merge without stack samples:
    the pair's residual noise correlated at one-sided p <= ``evidence_alpha`` / pairs tested, with r
    >= ``min_noise_correlation`` between gCPU series or >= ``min_cross_correlation`` between
    latency or throughput series; an ancestor joins a leaf only within ``rise_z`` standard
    errors; ``guard_points`` differences masked either side of a change; ``load_min_series``
    series at least to estimate the fleet's load. The map: ``block_weights``, the feature
    blocks' weights; ``merge_distance``, how close tight units must be to merge into one cell;
    ``cascade_buckets``, how many buckets apart change points are still one moment;
    ``relative_cap``, the ImportanceScore's cap on the relative change."""

    weights: ImportanceWeights = _nested(ImportanceWeights)
    block_weights: BlockWeights = _nested(BlockWeights)
    epochs: int = _setting(_SOM.epochs, _positive_count)
    fourier_terms: int = _setting(_SOM.fourier_terms, _count)
    evidence_alpha: float = _setting(_SOM.evidence_alpha, _probability)
    min_noise_correlation: float = _setting(_SOM.min_noise_correlation, _correlation)
    min_cross_correlation: float = _setting(_SOM.min_cross_correlation, _correlation)
    rise_z: float = _setting(_SOM.rise_z, _non_negative)
    guard_points: int = _setting(_SOM.guard_points, _count)
    load_min_series: int = _setting(_SOM.load_min_series, _positive_count)
    merge_distance: float = _setting(_SOM.merge_distance, _non_negative)
    cascade_buckets: int = _setting(_SOM.cascade_buckets, _count)
    relative_cap: float = _setting(_SOM.relative_cap, _positive)


@dataclass(frozen=True, slots=True)
class PairwiseConfig:
    """PairwiseDedup's evidence (``regbot.detection.stage_settings.PairwiseSettings``): the
    correlation rule also needs one-sided p <= ``evidence_alpha`` / (candidates × members compared)
    and, when one side is not a gCPU series, r >= ``cross_kind_correlation``; between two gCPU
    series the rises must agree with one cause within ``rise_z`` standard errors; ``guard_points``
    and ``load_min_series`` as in ``SomConfig``; ``cascade_containment``: the share of a caller's
    rise on its callee's stacks that makes the two one cascade (0 to 1; above 1: never)."""

    evidence_alpha: float = _setting(_PAIRWISE.evidence_alpha, _probability)
    cross_kind_correlation: float = _setting(_PAIRWISE.cross_kind_correlation, _correlation)
    rise_z: float = _setting(_PAIRWISE.rise_z, _non_negative)
    guard_points: int = _setting(_PAIRWISE.guard_points, _count)
    load_min_series: int = _setting(_PAIRWISE.load_min_series, _positive_count)
    cascade_containment: float = _setting(_PAIRWISE.cascade_containment, _non_negative)


@dataclass(frozen=True, slots=True)
class DedupSettings:
    """Same-regression merge, SOMDedup and PairwiseDedup (FBDetect §5.5), or KDD'18 stack
    deduplication (``method: kdd18``).

    ``merge_gap_s``: change points of one series closer than this are one regression (the same
    regression seen from overlapping analysis windows). ``seed``: the SOM's seed (its grid side
    is ⌈n^(1/4)⌉, FBDetect's rule). ``pairwise_max_gap_s``: groups whose members changed further
    apart are not compared. ``rules`` and ``combine``: PairwiseDedup's merge rules (empty: the
    stage's default, correlation ≥ 0.1 and stack overlap ≥ 0.5 where each applies).
    ``kdd18_bucket_s``: the KDD'18 method's time bucket. ``som`` and ``pairwise``: the two
    stages' evidence settings. ``merge_alpha`` and ``merge_min_points``: the same-regression
    merge's Mann–Whitney level and fewest points per side on a series with an earlier known
    regression. ``kdd18_tolerance``, ``kdd18_explained_share``, ``kdd18_stack_weight`` and
    ``kdd18_relative_cap``: the KDD'18 method's stopping share, explained share, stack-term
    weight and relative-magnitude cap. The scalar defaults (``merge_*``, ``kdd18_*``) equal
    ``regbot.detection.dedup.DedupSettings``'s (a test holds them so).
    """

    method: str = _setting("fbdetect", lambda value, where: _one_of(value, where, DEDUP_METHODS))
    merge_gap_s: float = _setting(6 * HOUR_S, _duration)
    merge_alpha: float = _setting(0.01, _probability)
    merge_min_points: int = _setting(3, _positive_count)
    seed: int = _setting(_SOM.seed, _count)
    pairwise_max_gap_s: float = _setting(_PAIRWISE.max_gap_s, _duration)
    rules: tuple[MergeRuleSettings, ...] = _section_list(MergeRuleSettings)
    combine: str = _setting(
        _PAIRWISE.combine, lambda value, where: _one_of(value, where, ("all", "any"))
    )
    kdd18_bucket_s: float = _setting(600.0, _duration)
    kdd18_tolerance: float = _setting(0.05, _share)
    kdd18_explained_share: float = _setting(0.1, _share)
    kdd18_stack_weight: float = _setting(0.5, _non_negative)
    kdd18_relative_cap: float = _setting(100.0, _positive)
    som: SomConfig = _nested(SomConfig)
    pairwise: PairwiseConfig = _nested(PairwiseConfig)


@dataclass(frozen=True, slots=True)
class CostShiftDomain:
    """Subroutines whose names match ``regex`` (``re.search``) form one cost domain; with a
    capture group, one domain per captured value."""

    name: str = _required(_text)
    regex: str = _required(_regex)


@dataclass(frozen=True, slots=True)
class CostShiftSettings:
    """Cost-shift analysis (FBDetect §5.4, ``regbot.detection.stage_settings.CostShiftSettings``): a
    domain costing more than ``domain_cost_ratio`` × the regression's change is skipped; a
    regression is a cost shift in a domain whose change is smaller than the regression's
    (one-sided at ``alpha``) and within ``negligible_share`` × the change; ``fallen_alpha``: the
    family-wise level at which members of a summed domain count as having fallen as the
    regression rose; ``new_share``: a level within this share of the regression's change of zero
    did not exist before it (a new domain, no shift); ``same_time_mass``: the credible mass of
    the moved cost's own change time that must meet the regression's (a shift happens at once).
    ``share_inflation``: recognise gCPU rises that are the deploy's share inflation (every share
    scaled up by a speed-up elsewhere, ``regbot.detection.share_inflation``), tested at
    ``inflation_alpha``."""

    enabled: bool = _setting(True, _boolean)
    domains: tuple[CostShiftDomain, ...] = _named_list(CostShiftDomain)
    domain_cost_ratio: float = _setting(_COST_SHIFT.domain_cost_ratio, _non_negative)
    negligible_share: float = _setting(_COST_SHIFT.negligible_share, _non_negative)
    alpha: float = _setting(_COST_SHIFT.alpha, _probability)
    fallen_alpha: float = _setting(_COST_SHIFT.fallen_alpha, _probability)
    new_share: float = _setting(_COST_SHIFT.new_share, _non_negative)
    same_time_mass: float = _setting(_COST_SHIFT.same_time_mass, _probability)
    share_inflation: bool = _setting(True, _boolean)
    inflation_alpha: float = _setting(_INFLATION.alpha, _probability)


@dataclass(frozen=True, slots=True)
class AttributionWeights:
    """Weights of a candidate score's parts (FBDetect §5.6); they need not sum to 1."""

    gcpu_attribution: float = _setting(0.5, _non_negative)
    text_similarity: float = _setting(0.25, _non_negative)
    correlation: float = _setting(0.25, _non_negative)


@dataclass(frozen=True, slots=True)
class AttributionSettings:
    """No candidate is named unless the top score reaches ``confidence_floor`` and leads the
    second by ``top1_margin``; at most ``max_candidates`` are listed. ``scope``: which modified
    frames gCPU attribution counts (``informative``, ``downstream`` or ``stack``, see
    ``regbot.attribution.gcpu_attribution``); ``fuzzy_floor``: the rapidfuzz ratio (0-100) a
    frame must reach to match a modified function by name alone; ``signal_kinds``: series kinds
    that describe a set-up rather than performance (feature flags, config rollouts), used for
    the correlation part and never run through detection."""

    weights: AttributionWeights = _nested(AttributionWeights)
    confidence_floor: float = _setting(0.5, _share)
    top1_margin: float = _setting(0.1, _share)
    max_candidates: int = _setting(3, _count)
    scope: str = _setting("informative", lambda value, where: _one_of(value, where, GCPU_SCOPES))
    fuzzy_floor: float = _setting(90.0, _percent)
    signal_kinds: frozenset[str] = _setting(
        frozenset({"feature_flag", "config", "rollout", "experiment"}), _words
    )


@dataclass(frozen=True, slots=True)
class CommentPolicy:
    """PR comments: at most ``max_per_run`` per run, only for regressions whose attribution
    confidence is at least ``min_confidence``."""

    enabled: bool = _setting(True, _boolean)
    max_per_run: int = _setting(5, _count)
    min_confidence: Confidence = _setting("high", _confidence)


@dataclass(frozen=True, slots=True)
class GitHubSettings:
    """``token_env`` names the environment variable holding the token (never the token itself)."""

    api_url: str = _setting("https://api.github.com", _url)
    token_env: str = _setting("GITHUB_TOKEN", _text)
    comments: CommentPolicy = _nested(CommentPolicy)


@dataclass(frozen=True, slots=True)
class GateSettings:
    """The gate (a commit status named ``name``): it fails on any reported regression (the
    default: a regression's size and evidence decide, not whom attribution could name), on
    high-confidence ones only, or never; regressions with ``|delta| < min_delta`` (the series'
    unit) are ignored; ``on_missing_baseline`` is the state when there is no historical data."""

    fail_on: FailOn = _setting("any", _fail_on)
    min_delta: float = _setting(0.0, _non_negative)
    on_missing_baseline: OnMissingBaseline = _setting("neutral", _on_missing_baseline)
    name: str = _setting("regbot/performance", _text)


@dataclass(frozen=True, slots=True)
class ProfilesSettings:
    """gCPU series from profiles: time bucket width, triviality floor (a share: 0.00001 is
    SPEC §3's 0.001%), and pprof's sample type (None: the first)."""

    bucket_s: float = _setting(60.0, _duration)
    gcpu_floor: float = _setting(0.00001, _share)
    sample_type: str | None = _setting(None, _text)


@dataclass(frozen=True, slots=True)
class ChangePointConfig:
    """§5.2.1 (``regbot.detection.stage_settings.ChangePointSettings``): the likelihood-ratio test's
    level, the CUSUM/EM iteration budget, the fewest points each side of a change, how many older
    changes may be cut off, the margin (in windows) and the window's least share of the change's
    posterior, the change-time interval's mass, and ``multiple_testing`` (``fdr``: alpha is the
    run's false discovery rate; ``none``: each series at alpha alone)."""

    alpha: float = _setting(_CHANGE_POINT.alpha, _probability)
    max_iterations: int = _setting(_CHANGE_POINT.max_iterations, _count)
    min_points_each_side: int = _setting(_CHANGE_POINT.min_points_each_side, _count)
    max_segment_cuts: int = _setting(_CHANGE_POINT.max_segment_cuts, _count)
    search_margin: float = _setting(_CHANGE_POINT.search_margin, _non_negative)
    min_window_share: float = _setting(_CHANGE_POINT.min_window_share, _share)
    interval_mass: float = _setting(_CHANGE_POINT.interval_mass, _probability)
    multiple_testing: str = _setting(
        _CHANGE_POINT.multiple_testing,
        lambda value, where: _one_of(value, where, MULTIPLE_TESTING),
    )


@dataclass(frozen=True, slots=True)
class WentAwayConfig:
    """§5.2.2 (see ``regbot.detection.stage_settings.WentAwaySettings``): SAX N and X, the
    new-pattern share, Mann–Kendall's level, the MAD multiplier, the percentiles
    SignificantRegression compares, RegressionGoneAway's drop level, z and fewest points after a
    drop, the band of std / (1.4826·MAD) in which noise is normal, the previous day's length, and
    the periods (ACF at ``acf_alpha``) a history is deseasonalised at."""

    sax_buckets: int = _setting(_WENT_AWAY.sax_buckets, _count)
    sax_valid_share: float = _setting(_WENT_AWAY.sax_valid_share, _share)
    new_pattern_share: float = _setting(_WENT_AWAY.new_pattern_share, _share)
    trend_alpha: float = _setting(_WENT_AWAY.trend_alpha, _probability)
    mad_coefficient: float = _setting(_WENT_AWAY.mad_coefficient, _positive)
    historical_percentile: float = _setting(_WENT_AWAY.historical_percentile, _percentile)
    previous_day_percentile: float = _setting(_WENT_AWAY.previous_day_percentile, _percentile)
    gone_away_points: int = _setting(_WENT_AWAY.gone_away_points, _count)
    gone_away_z: float = _setting(_WENT_AWAY.gone_away_z, _positive)
    drop_alpha: float = _setting(_WENT_AWAY.drop_alpha, _probability)
    normal_tail_ratio: tuple[float, float] = _setting(_WENT_AWAY.normal_tail_ratio, _band)
    day_s: float = _setting(_WENT_AWAY.day_s, _duration)
    periods_s: tuple[float, ...] = _setting(_WENT_AWAY.periods_s, _durations)
    acf_alpha: float = _setting(_WENT_AWAY.acf_alpha, _probability)


@dataclass(frozen=True, slots=True)
class SeasonalityConfig:
    """§5.2.3: the ACF's significance level, the periods tried, and the z below which a change
    is seasonal."""

    acf_alpha: float = _setting(_SEASONALITY.acf_alpha, _probability)
    periods_s: tuple[float, ...] = _setting(_SEASONALITY.periods_s, _durations)
    z_threshold: float = _setting(_SEASONALITY.z_threshold, _positive)


@dataclass(frozen=True, slots=True)
class LongTermConfig:
    """§5.3: on or off, its own analysis window, the edge share, the gradual-change RMSE and the
    noise guard's z."""

    enabled: bool = _setting(_LONG_TERM.enabled, _boolean)
    analysis_s: float = _setting(_LONG_TERM.analysis_s, _duration)
    edge_share: float = _setting(_LONG_TERM.edge_share, _share)
    rmse_threshold: float = _setting(_LONG_TERM.rmse_threshold, _positive)
    z: float = _setting(_LONG_TERM.z, _non_negative)


@dataclass(frozen=True, slots=True)
class FleetLoadConfig:
    """The fleet-wide load removed before the change-point test
    (``regbot.detection.stage_settings.FleetLoadSettings``): on or off, the fewest series on one
    time axis and points of history, the most rows the factor is estimated from, the refinement
    rounds, the Huber weights' k, and the loading's t statistic a series needs to be adjusted."""

    enabled: bool = _setting(_FLEET_LOAD.enabled, _boolean)
    min_series: int = _setting(_FLEET_LOAD.min_series, _positive_count)
    min_history: int = _setting(_FLEET_LOAD.min_history, _positive_count)
    max_rows: int = _setting(_FLEET_LOAD.max_rows, _positive_count)
    iterations: int = _setting(_FLEET_LOAD.iterations, _count)
    huber_k: float = _setting(_FLEET_LOAD.huber_k, _positive)
    min_t: float = _setting(_FLEET_LOAD.min_t, _non_negative)


@dataclass(frozen=True, slots=True)
class DetectionConfig:
    """The detection pipeline's constants (FBDetect §5.2–5.3), the stages' own defaults (the
    paper's values). ``engine``: ``fbdetect`` (KDD'18's detector is not offered yet)."""

    engine: str = _setting("fbdetect", lambda value, where: _one_of(value, where, ("fbdetect",)))
    change_point: ChangePointConfig = _nested(ChangePointConfig)
    went_away: WentAwayConfig = _nested(WentAwayConfig)
    seasonality: SeasonalityConfig = _nested(SeasonalityConfig)
    long_term: LongTermConfig = _nested(LongTermConfig)
    fleet_load: FleetLoadConfig = _nested(FleetLoadConfig)


@dataclass(frozen=True, slots=True)
class Config:
    """Everything ``regbot.yml`` can say; ``source`` is the file it came from."""

    repository: RepositorySettings = _nested(RepositorySettings)
    sources: SourceSettings = _nested(SourceSettings)
    workloads: Mapping[str, WorkloadSettings] = field(
        default_factory=_default_workloads, metadata={"read": _workloads}
    )
    higher_is_better: frozenset[str] = _setting(frozenset({"throughput", "qps"}), _words)
    detection: DetectionConfig = _nested(DetectionConfig)
    dedup: DedupSettings = _nested(DedupSettings)
    cost_shift: CostShiftSettings = _nested(CostShiftSettings)
    attribution: AttributionSettings = _nested(AttributionSettings)
    github: GitHubSettings = _nested(GitHubSettings)
    gate: GateSettings = _nested(GateSettings)
    profiles: ProfilesSettings = _nested(ProfilesSettings)
    state: Path = _path(".regbot/state.db")
    source: str | None = None

    def workload(self, name: str = "default") -> WorkloadSettings:
        """The workload ``--workload`` names: one from the file, else a Table 1 preset."""
        if name in self.workloads:
            return self.workloads[name]
        if name in WORKLOAD_PRESETS:
            return WORKLOAD_PRESETS[name]
        known = sorted(set(self.workloads) | set(WORKLOAD_PRESETS))
        raise InputError("--workload", "one of " + ", ".join(known), name)


# --- reading ----------------------------------------------------------------------------------


def load_config(path: Path | None, *, search_dir: Path | None = None) -> Config:
    """Read ``path``; with None, ``regbot.yml`` in ``search_dir`` (default: the current
    directory) if there is one, else the defaults."""
    if path is None:
        folder = (search_dir or Path.cwd()).absolute()
        if not (folder / CONFIG_NAME).is_file():
            return parse_config(None, source=CONFIG_NAME, base_dir=folder)
        path = folder / CONFIG_NAME
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
    return parse_config(data, source=str(path), base_dir=Path(path).absolute().parent, lines=lines)


def parse_config(
    data: object, *, source: str, base_dir: Path, lines: Mapping[str, int] | None = None
) -> Config:
    """A Config from YAML data (what ``yaml.safe_load`` returns). ``source`` names the file in
    messages, ``base_dir`` anchors relative paths, ``lines`` maps dotted key paths to lines."""
    return _read_section(_Reader(source, base_dir, lines or {}), Config, data, "", source=source)


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
