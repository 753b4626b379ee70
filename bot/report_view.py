"""A stored SPEC §4 report entry read back as a checked view (every field validated, naming the
field that is wrong), and the number formats the comment, the gate and the views share."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from regbot.bot.github.markdown_safe import inline
from regbot.errors import InputError

_SHA = re.compile(r"[0-9a-fA-F]{4,64}")


def read_pull_request(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(where, "a positive pull request number", value)
    return value


@dataclass(frozen=True, slots=True)
class SuspectCommit:
    """One candidate of a regression (SPEC §4 ``candidates``), validated; ``rank`` is 1-based."""

    rank: int
    commit: str
    pull_request: int | None
    title: str
    author: str
    score: float
    gcpu_attribution: float
    text_similarity: float
    correlation: float


@dataclass(frozen=True, slots=True)
class RegressionView:
    """The fields of one SPEC §4 regression entry the comment shows, validated. ``unit`` is the
    optional extra field ``unit`` (the report does not carry one yet: values are then shown
    without a unit, and gCPU always as a percentage of CPU)."""

    id: str
    series: str
    kind: str
    unit: str | None
    detector: str
    change_time_s: float
    before: float | None
    after: float | None
    delta: float | None
    relative_delta: float | None
    p_value: float | None
    group: str
    duplicates: tuple[str, ...]
    verdicts: Mapping[str, Mapping[str, object]]
    candidates: tuple[SuspectCommit, ...]
    confidence: str

    @property
    def is_gcpu(self) -> bool:
        return self.kind == "gcpu"


def read_field(entry: Mapping[str, object], key: str, where: str) -> object:
    if key not in entry:
        raise InputError(f"{where}.{key}", "a value (missing)")
    return entry[key]


def _text(entry: Mapping[str, object], key: str, where: str, *, optional: bool = False) -> str:
    value = entry.get(key) if optional else read_field(entry, key, where)
    if value is None and optional:
        return ""
    if not isinstance(value, str):
        raise InputError(f"{where}.{key}", "text", value)
    return value


def read_finite(value: object, where: str, expected: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(where, expected, value)
    return float(value)


def _number(entry: Mapping[str, object], key: str, where: str) -> float:
    return read_finite(read_field(entry, key, where), f"{where}.{key}", "a finite number")


def _nullable_number(entry: Mapping[str, object], key: str, where: str) -> float | None:
    """A number the report writes as null when it is not finite (SPEC §4: ``before`` etc.)."""
    value = entry.get(key)
    return None if value is None else read_finite(value, f"{where}.{key}", "a finite number or null")


def read_mapping(value: object, where: str) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise InputError(where, "an object", type(value).__name__)
    return value


def read_list(value: object, where: str) -> Sequence[object]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise InputError(where, "a list", type(value).__name__)
    return value


def _suspect(entry: object, rank: int, where: str) -> SuspectCommit:
    entry = read_mapping(entry, where)
    commit = _text(entry, "commit", where)
    if not _SHA.fullmatch(commit):
        raise InputError(f"{where}.commit", "a hexadecimal commit sha", commit)
    pr = entry.get("pull_request")
    if pr is not None:
        pr = read_pull_request(pr, f"{where}.pull_request")
    parts = read_mapping(read_field(entry, "parts", where), f"{where}.parts")
    return SuspectCommit(
        rank=rank,
        commit=commit.lower(),
        pull_request=pr,
        title=_text(entry, "title", where),
        author=_text(entry, "author", where, optional=True),
        score=_number(entry, "score", where),
        gcpu_attribution=_number(parts, "gcpu_attribution", f"{where}.parts"),
        text_similarity=_number(parts, "text_similarity", f"{where}.parts"),
        correlation=_number(parts, "correlation", f"{where}.parts"),
    )


def read_regression(entry: Mapping[str, object], where: str = "regression") -> RegressionView:
    """A SPEC §4 regression entry as a :class:`RegressionView`; InputError names the bad field."""
    entry = read_mapping(entry, where)
    rid = _text(entry, "id", where)
    verdicts_raw = read_mapping(entry.get("verdicts", {}), f"{where}.verdicts")
    verdicts = {
        str(stage): read_mapping(v, f"{where}.verdicts.{stage}") for stage, v in verdicts_raw.items()
    }
    duplicates: list[str] = []
    for i, d in enumerate(read_list(entry.get("duplicates", []), f"{where}.duplicates")):
        if not isinstance(d, str):
            raise InputError(f"{where}.duplicates[{i}]", "a regression id", d)
        duplicates.append(d)
    candidates = read_list(entry.get("candidates", []), f"{where}.candidates")
    confidence = _text(entry, "confidence", where)
    if confidence not in ("high", "low", "none"):
        raise InputError(f"{where}.confidence", "one of high, low, none", confidence)
    unit = _text(entry, "unit", where, optional=True) or None
    return RegressionView(
        id=rid,
        series=_text(entry, "series", where),
        kind=_text(entry, "kind", where),
        unit=unit,
        detector=_text(entry, "detector", where),
        change_time_s=_number(entry, "change_time", where),
        before=_nullable_number(entry, "before", where),
        after=_nullable_number(entry, "after", where),
        delta=_nullable_number(entry, "delta", where),
        relative_delta=_nullable_number(entry, "relative_delta", where),
        p_value=_nullable_number(entry, "p_value", where),
        group=_text(entry, "group", where, optional=True) or rid,
        duplicates=tuple(duplicates),
        verdicts=verdicts,
        candidates=tuple(
            _suspect(c, i + 1, f"{where}.candidates[{i}]") for i, c in enumerate(candidates)
        ),
        confidence=confidence,
    )


def format_number(value: float | None, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits, never rounding away integer digits (``1,000``
    with thousands separators from ``10**digits`` up), in exponent form below ``1e-4``;
    ``n/a`` for None or a non-finite value."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 10**digits:
        return f"{value:,.0f}"
    if magnitude < 1e-4:
        return f"{value:.{digits - 1}e}"
    shown = f"{value:.{digits}g}"
    return f"{value:,.0f}" if "e" in shown else shown  # 999.6 rounds up to 1e+03


def _signed(text: str, value: float) -> str:
    return text if text.startswith("-") or text == "n/a" else f"+{text}"


def format_value(view: RegressionView, value: float | None) -> str:
    """A level of the series: gCPU (a share of CPU) as a percentage, ``0.0123`` -> ``1.23%``;
    other kinds as a number with the entry's unit when it has one."""
    if view.is_gcpu:
        return "n/a" if value is None else f"{format_number(value * 100)}%"
    shown = format_number(value)
    return f"{shown} {inline(view.unit, 20)}" if view.unit and value is not None else shown


def format_delta(view: RegressionView, value: float | None) -> str:
    """A signed change: gCPU in percentage points (``+0.19 pp``), others in the series' unit."""
    if value is None:
        return "n/a"
    if view.is_gcpu:
        return f"{_signed(format_number(value * 100), value)} pp"
    shown = _signed(format_number(value), value)
    return f"{shown} {inline(view.unit, 20)}" if view.unit else shown


def format_percent(value: float) -> str:
    """``value`` (a share) as a percentage, sign only when negative: one decimal, or two
    significant digits below 0.1% so a small share does not read as zero."""
    percent = value * 100
    return f"{percent:.1f}%" if abs(percent) >= 0.1 or percent == 0 else f"{percent:.2g}%"


def format_relative(value: float | None) -> str:
    """A signed relative change as a percentage: one decimal (``+12.3%``), or two significant
    digits below 0.1% so a small change does not read as zero; "new" where there is none (the
    level before was zero or near it: ``detection.ratios``)."""
    if value is None or not math.isfinite(value):
        return "new"
    return _signed(format_percent(value), value)


def format_share(value: float) -> str:
    return f"{value * 100:.0f}%"
