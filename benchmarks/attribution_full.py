"""The attribution benchmark's ``--full`` mode: the whole `regbot run --dry-run` per seeded
scenario; whether detection reported the culprit's series, whether attribution named the
culprit, and where each planted false alarm went."""

from __future__ import annotations

import re
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from attribution_regbot_run import run_quietly, series_fate, short_name
from attribution_table import percent, text_table

from regbot.datasets.service import build_scenario


@dataclass(frozen=True)
class FullResult:
    """One seed's `regbot run`: where the culprit's series went, the regression that names the
    culprit (its own or the one its group was merged into), where the false alarms went."""

    seed: int
    kind: str
    culprit_fate: str
    named_by: str  # series of the first reported regression naming the culprit ("" for none)
    confidence: str
    first: bool
    reported: int
    fates: dict[str, str]
    seconds: float


def run_full(seed: int) -> FullResult:
    with tempfile.TemporaryDirectory(prefix=f"regbot-attribution-full-{seed}-") as folder:
        scenario = build_scenario(Path(folder) / "scenario", seed)
        report, seconds = run_quietly(scenario.run_arguments, Path(folder), f"seed {seed}")
    naming = [
        r
        for r in report["regressions"]
        if scenario.culprit_sha in [c["commit"] for c in r["candidates"]]
    ]
    naming.sort(key=lambda r: r["series"] != scenario.culprit_function)
    entry = naming[0] if naming else None
    own = next((r for r in report["regressions"] if r["series"] == scenario.culprit_function), None)
    shown = entry or own
    return FullResult(
        seed=seed,
        kind=scenario.kind,
        culprit_fate=series_fate(report, scenario.culprit_function),
        named_by=entry["series"] if entry else "",
        confidence=shown["confidence"] if shown else "-",
        first=bool(entry) and entry["candidates"][0]["commit"] == scenario.culprit_sha,
        reported=len(report["regressions"]),
        fates={s: series_fate(report, s) for s in scenario.planted_false_alarms},
        seconds=seconds,
    )


def full_report(results: Sequence[FullResult]) -> str:
    rows = [
        [
            str(r.seed),
            r.kind,
            r.culprit_fate,
            ("its own" if r.culprit_fate == "REPORTED" else short_name(r.named_by))
            if r.named_by
            else "-",
            r.confidence,
            "yes" if r.first else "no",
            str(r.reported),
            ", ".join(short_name(s) for s, f in r.fates.items() if f == "REPORTED") or "-",
            f"{r.seconds:.1f}s",
        ]
        for r in results
    ]
    header = (
        "seed",
        "kind",
        "culprit's series",
        "culprit named by",
        "confidence",
        "#1",
        "reported",
        "false alarms reported",
        "run",
    )
    out = [text_table("regbot run --dry-run per seed", header, rows), ""]
    n = len(results)
    reported = sum(r.culprit_fate == "REPORTED" for r in results)
    covered = sum("into a reported" in r.culprit_fate for r in results)
    out.append(
        f"culprit's series: reported {percent(reported, n)}, merged into a reported regression"
        f" {percent(covered, n)}; culprit named by a reported regression"
        f" {percent(sum(bool(r.named_by) for r in results), n)}, ranked #1"
        f" {percent(sum(r.first for r in results), n)}"
    )
    lost = Counter(
        re.sub(r" into [^,]+, itself", " into a group itself", r.culprit_fate)
        for r in results
        if r.culprit_fate != "REPORTED" and "into a reported" not in r.culprit_fate
    )
    out.append(
        "culprit's series lost: " + (", ".join(f"{k} ×{v}" for k, v in lost.most_common()) or "-")
    )
    fates: Counter[str] = Counter()
    for r in results:
        for series, fate in r.fates.items():
            name = "gcpu cost shift" if series.startswith("gcpu:") else short_name(series)
            fates[f"{name}: {re.sub(r' into [^,]+, itself', ' into a group itself', fate)}"] += 1
    out.append("planted false alarms: " + ", ".join(f"{k} ×{v}" for k, v in sorted(fates.items())))
    return "\n".join(out)
