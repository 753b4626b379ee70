"""A stored SPEC §4 report read back into :mod:`regbot.report.model`, once, at the edge: every
field checked, an ``InputError`` naming the field that is wrong (``report.regressions[2].
candidates[0].commit: expected a hexadecimal commit sha``). Used by ``regbot explain`` and for
stored runs; O(size of the report).

What a stored report may lack: an entry's ``group`` (its own id), ``duplicates``, ``verdicts``
and ``candidates`` (empty), a candidate's ``author`` and ``matched``, a funnel entry (0), and
every section ``regbot run`` adds. What it must have: the rest of SPEC §4.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import cast

from regbot.detection.stages import FUNNEL_KEYS
from regbot.errors import InputError
from regbot.report.model import (
    CONFIDENCES,
    CommentOutcome,
    DeploySection,
    Funnel,
    GateSection,
    MissingBaseline,
    Publishing,
    RegressionEntry,
    Report,
    SkippedComment,
    SuspectCommit,
    VerdictEntry,
    Windows,
    WindowSection,
    WindowUseSection,
)
from regbot.report.plain import JSONValue

__all__ = [
    "read_finite",
    "read_list",
    "read_mapping",
    "read_pull_request",
    "read_regression",
    "read_report",
]

_SHA = re.compile(r"[0-9a-fA-F]{4,64}")
_WINDOW_NAMES = ("historical", "analysis", "extended")


def read_mapping(value: object, where: str) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise InputError(where, "an object", type(value).__name__)
    return value


def read_list(value: object, where: str) -> Sequence[object]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise InputError(where, "a list", type(value).__name__)
    return value


def read_finite(value: object, where: str, expected: str = "a finite number") -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(where, expected, value)
    return float(value)


def read_pull_request(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(where, "a positive pull request number", value)
    return value


def _field(entry: Mapping[str, object], key: str, where: str) -> object:
    if key not in entry:
        raise InputError(f"{where}.{key}", "a value (missing)")
    return entry[key]


def _text(entry: Mapping[str, object], key: str, where: str) -> str:
    value = _field(entry, key, where)
    if not isinstance(value, str):
        raise InputError(f"{where}.{key}", "text", value)
    return value


def _optional_text(entry: Mapping[str, object], key: str, where: str) -> str | None:
    value = entry.get(key)
    if value is not None and not isinstance(value, str):
        raise InputError(f"{where}.{key}", "text or null", value)
    return value


def _flag(entry: Mapping[str, object], key: str, where: str, default: bool) -> bool:
    value = entry.get(key, default)
    if not isinstance(value, bool):
        raise InputError(f"{where}.{key}", "true or false", value)
    return value


def _number(entry: Mapping[str, object], key: str, where: str) -> float:
    return read_finite(_field(entry, key, where), f"{where}.{key}")


def _nullable_number(entry: Mapping[str, object], key: str, where: str) -> float | None:
    """A number the report writes as null when it is not finite (SPEC §4: ``before`` etc.)."""
    value = entry.get(key)
    return (
        None if value is None else read_finite(value, f"{where}.{key}", "a finite number or null")
    )


def _count(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(where, "a whole number ≥ 0", value)
    return value


def _texts(value: object, where: str, what: str = "text") -> tuple[str, ...]:
    items = read_list(value, where)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise InputError(f"{where}[{i}]", what, item)
    return tuple(cast(Sequence[str], items))


def _bounds(value: object, where: str) -> tuple[float, float]:
    items = read_list(value, where)
    if len(items) != 2:
        raise InputError(where, "[start, end]", value)
    return read_finite(items[0], f"{where}[0]"), read_finite(items[1], f"{where}[1]")


def read_suspect(value: object, rank: int, where: str) -> SuspectCommit:
    entry = read_mapping(value, where)
    commit = _text(entry, "commit", where)
    if not _SHA.fullmatch(commit):
        raise InputError(f"{where}.commit", "a hexadecimal commit sha", commit)
    pr = entry.get("pull_request")
    parts = read_mapping(_field(entry, "parts", where), f"{where}.parts")
    return SuspectCommit(
        commit=commit.lower(),
        pull_request=None if pr is None else read_pull_request(pr, f"{where}.pull_request"),
        title=_text(entry, "title", where),
        score=_number(entry, "score", where),
        gcpu_attribution=_number(parts, "gcpu_attribution", f"{where}.parts"),
        text_similarity=_number(parts, "text_similarity", f"{where}.parts"),
        correlation=_number(parts, "correlation", f"{where}.parts"),
        author=_optional_text(entry, "author", where) or "",
        matched=_texts(entry.get("matched", []), f"{where}.matched"),
        rank=rank,
        pull_request_from=_optional_text(entry, "pull_request_from", where),
    )


def _suspects(value: object, where: str) -> tuple[SuspectCommit, ...]:
    return tuple(
        read_suspect(item, i + 1, f"{where}[{i}]") for i, item in enumerate(read_list(value, where))
    )


def _verdict(value: object, where: str) -> VerdictEntry:
    verdict = read_mapping(value, where)
    passed = _flag(verdict, "passed", where, True)  # a verdict that does not say has passed
    reason = verdict.get("reason", "")
    if not isinstance(reason, str):
        raise InputError(f"{where}.reason", "text", reason)
    numbers = {
        str(k): cast(JSONValue, v) for k, v in verdict.items() if k not in ("passed", "reason")
    }
    return VerdictEntry(passed, reason, numbers)


def read_regression(value: object, where: str = "regression") -> RegressionEntry:
    """A SPEC §4 regression entry; InputError names the bad field."""
    entry = read_mapping(value, where)
    rid = _text(entry, "id", where)
    stored = entry.get("verdicts")
    verdicts = read_mapping({} if stored is None else stored, f"{where}.verdicts")
    confidence = _text(entry, "confidence", where)
    if confidence not in CONFIDENCES:
        raise InputError(f"{where}.confidence", "one of high, low, none", confidence)
    interval = entry.get("change_time_interval")
    optional_lists = {
        key: entry.get(key) for key in ("ranking", "attribution_notes", "stack_paths")
    }
    feedback_from = entry.get("feedback_from")
    return RegressionEntry(
        id=rid,
        series=_text(entry, "series", where),
        kind=_text(entry, "kind", where),
        unit=_optional_text(entry, "unit", where) or None,
        detector=_text(entry, "detector", where),
        change_time_s=_number(entry, "change_time", where),
        change_time_interval=None
        if interval is None
        else _bounds(interval, f"{where}.change_time_interval"),
        before=_nullable_number(entry, "before", where),
        after=_nullable_number(entry, "after", where),
        delta=_nullable_number(entry, "delta", where),
        relative_delta=_nullable_number(entry, "relative_delta", where),
        p_value=_nullable_number(entry, "p_value", where),
        group=_optional_text(entry, "group", where) or rid,
        duplicates=_texts(entry.get("duplicates") or [], f"{where}.duplicates", "a regression id"),
        verdicts={
            str(stage): _verdict(v, f"{where}.verdicts.{stage}") for stage, v in verdicts.items()
        },
        candidates=_suspects(entry.get("candidates") or [], f"{where}.candidates"),
        confidence=confidence,
        ranking=None
        if optional_lists["ranking"] is None
        else _suspects(optional_lists["ranking"], f"{where}.ranking"),
        attribution_notes=None
        if optional_lists["attribution_notes"] is None
        else _texts(optional_lists["attribution_notes"], f"{where}.attribution_notes"),
        stack_paths=None
        if optional_lists["stack_paths"] is None
        else tuple(
            _texts(p, f"{where}.stack_paths[{i}]")
            for i, p in enumerate(read_list(optional_lists["stack_paths"], f"{where}.stack_paths"))
        ),
        feedback=_optional_text(entry, "feedback", where),
        feedback_from=None
        if feedback_from is None
        else _texts(feedback_from, f"{where}.feedback_from"),
    )


def _windows(value: object, where: str) -> Windows:
    section = read_mapping(value, where)
    historical, analysis, extended = (
        _bounds(_field(section, name, where), f"{where}.{name}") for name in _WINDOW_NAMES
    )
    return Windows(historical, analysis, extended)


def _window_section(value: object, where: str) -> WindowSection:
    section = read_mapping(value, where)
    use = None
    if "earliest" in section:
        points = read_mapping(_field(section, "points", where), f"{where}.points")
        min_points = read_mapping(_field(section, "min_points", where), f"{where}.min_points")
        use = WindowUseSection(
            min_points={
                str(k): _count(v, f"{where}.min_points.{k}") for k, v in min_points.items()
            },
            points={
                str(k): (
                    _count(read_list(v, f"{where}.points.{k}")[0], f"{where}.points.{k}[0]"),
                    _count(read_list(v, f"{where}.points.{k}")[-1], f"{where}.points.{k}[1]"),
                )
                for k, v in points.items()
            },
            widened_series=_count(section.get("widened_series", 0), f"{where}.widened_series"),
            earliest=_windows(section["earliest"], f"{where}.earliest"),
        )
    return WindowSection(_windows(section, where), use)


def _funnel(value: object, where: str) -> Funnel:
    section = read_mapping(value, where)
    return Funnel(**{k: _count(section.get(k, 0), f"{where}.{k}") for k in FUNNEL_KEYS})


def _deploy(value: object, where: str) -> DeploySection:
    section = read_mapping(value, where)
    dry_run = _flag(section, "dry_run", where, False)
    return DeploySection(
        sha=_text(section, "sha", where),
        previous=_text(section, "previous", where),
        deployed_at=_number(section, "deployed_at", where),
        commits=_count(section.get("commits", 0), f"{where}.commits"),
        dry_run=dry_run,
    )


def _missing(value: object, where: str) -> MissingBaseline:
    section = read_mapping(value, where)
    scope = _text(section, "scope", where)
    if scope not in ("source", "series"):
        raise InputError(f"{where}.scope", "source or series", scope)
    points = section.get("points")
    return MissingBaseline(
        scope="source" if scope == "source" else "series",
        name=_text(section, "name", where),
        reason=_text(section, "reason", where),
        points=None if points is None else _count(points, f"{where}.points"),
        needed=_count(_field(section, "needed", where), f"{where}.needed"),
    )


def _gate(value: object, where: str) -> GateSection:
    section = read_mapping(value, where)
    enforced = _flag(section, "enforced", where, False)
    return GateSection(
        name=_text(section, "name", where),
        state=_text(section, "state", where),
        title=_text(section, "title", where),
        summary=_optional_text(section, "summary", where) or "",
        failing=_texts(section.get("failing") or [], f"{where}.failing", "a regression id"),
        missing_baseline=_count(section.get("missing_baseline", 0), f"{where}.missing_baseline"),
        enforced=enforced,
        published_as=_optional_text(section, "published_as", where),
    )


def _publishing(value: object, where: str) -> Publishing:
    section = read_mapping(value, where)
    enabled = _flag(section, "enabled", where, False)
    return Publishing(
        enabled, _optional_text(section, "reason", where), _optional_text(section, "error", where)
    )


def _comment(value: object, where: str) -> CommentOutcome:
    section = read_mapping(value, where)
    outcome = _text(section, "outcome", where)
    if outcome not in ("created", "edited", "unchanged"):
        raise InputError(f"{where}.outcome", "created, edited or unchanged", outcome)
    comment_id = _field(section, "comment_id", where)
    return CommentOutcome(
        group_id=_text(section, "group", where),
        regression_id=_text(section, "regression", where),
        pull_request=read_pull_request(_field(section, "pull_request", where), where),
        comment_id=_count(comment_id, f"{where}.comment_id"),
        url=_text(section, "url", where),
        outcome=outcome,  # type: ignore[arg-type]  # checked above
    )


def _skipped(value: object, where: str) -> SkippedComment:
    section = read_mapping(value, where)
    pr = section.get("pull_request")
    return SkippedComment(
        group_id=_text(section, "group", where),
        regression_id=_text(section, "regression", where),
        pull_request=None if pr is None else read_pull_request(pr, f"{where}.pull_request"),
        reason=_text(section, "reason", where),
    )


def read_report(value: object, where: str = "report") -> Report:
    """A whole stored report (SPEC §4 plus what ``regbot run`` adds)."""
    report = read_mapping(value, where)

    def listed(key: str) -> list[tuple[object, str]]:
        items = read_list(_field(report, key, where), f"{where}.{key}")
        return [(v, f"{where}.{key}[{i}]") for i, v in enumerate(items)]

    sources = report.get("sources")
    return Report(
        regbot_version=_text(report, "regbot_version", where),
        window=_window_section(_field(report, "window", where), f"{where}.window"),
        funnel=_funnel(_field(report, "funnel", where), f"{where}.funnel"),
        regressions=tuple(read_regression(v, w) for v, w in listed("regressions")),
        filtered=tuple(read_regression(v, w) for v, w in listed("filtered"))
        if "filtered" in report
        else (),
        deploy=_deploy(report["deploy"], f"{where}.deploy") if report.get("deploy") else None,
        sources=None
        if sources is None
        else {
            str(k): _count(v, f"{where}.sources.{k}")
            for k, v in read_mapping(sources, f"{where}.sources").items()
        },
        missing_baseline=tuple(_missing(v, w) for v, w in listed("missing_baseline"))
        if report.get("missing_baseline") is not None
        else None,
        gate=_gate(report["gate"], f"{where}.gate") if report.get("gate") else None,
        publishing=_publishing(report["publishing"], f"{where}.publishing")
        if report.get("publishing")
        else None,
        comments=tuple(_comment(v, w) for v, w in listed("comments"))
        if report.get("comments") is not None
        else None,
        comments_skipped=tuple(_skipped(v, w) for v, w in listed("comments_skipped"))
        if report.get("comments_skipped") is not None
        else None,
    )
