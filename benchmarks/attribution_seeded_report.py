"""The attribution benchmark's tables for the seeded scenarios: top-1 / top-3 accuracy and
suggestions of every method, regbot by scenario kind and by confidence, what beat the culprit,
time per scenario, FBDetect's targets; and the list of regbot's top-1 misses."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence

from attribution_seeded import METHODS, MethodResult, SeedResult
from attribution_table import percent, text_table

METHOD_TITLES = {
    "regbot": "regbot (informative scope, deepest frame)",
    "fbdetect-stack-alone": "FBDetect paper (stack scope, alone)",
    "text-only": "text similarity only",
    "most-recent": "most recent commit",
}


def _accuracy_row(results: Sequence[MethodResult]) -> list[str]:
    n = len(results)
    suggested = [r for r in results if r.suggested]
    top1 = sum(r.rank == 0 for r in results)
    top3 = sum(r.rank is not None and r.rank < 3 for r in results)
    s1 = sum(r.rank == 0 for r in suggested)
    s3 = sum(r.rank is not None and r.rank < 3 for r in suggested)
    return [
        str(n),
        percent(top1, n),
        percent(top3, n),
        percent(len(suggested), n),
        percent(s1, len(suggested)),
        percent(s3, len(suggested)),
    ]


ACCURACY_HEADER = ("", "seeds", "top-1", "top-3", "suggests", "top-1|sugg", "top-3|sugg")


def seeded_report(results: Sequence[SeedResult]) -> str:
    """The benchmark's tables (see benchmarks/attribution.py's docstring)."""
    n = len(results)
    kinds = Counter(r.kind for r in results)
    out = [
        f"attribution benchmark: {n} seeds ("
        + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
        + f"; ambiguous {sum(r.ambiguous for r in results)});"
        f" {statistics.mean(r.commits for r in results):.1f} candidate commits per deploy",
        "",
    ]
    rows = [[METHOD_TITLES[m], *_accuracy_row([r.methods[m] for r in results])] for m in METHODS]
    out += [text_table("all methods (accuracy over each ranking)", ACCURACY_HEADER, rows), ""]

    def regbot_of(selected: Sequence[SeedResult]) -> list[MethodResult]:
        return [r.methods["regbot"] for r in selected]

    rows = []
    for kind in sorted(kinds):
        for ambiguous in (False, True):
            selected = [r for r in results if r.kind == kind and r.ambiguous == ambiguous]
            if selected:
                label = f"{kind}{' (ambiguous)' if ambiguous else ''}"
                rows.append([label, *_accuracy_row(regbot_of(selected))])
    out += [text_table("regbot by scenario kind", ACCURACY_HEADER, rows), ""]
    rows = []
    for confidence in ("high", "low", "none"):
        selected = [r for r in results if r.methods["regbot"].confidence == confidence]
        res = regbot_of(selected)
        rows.append(
            [
                confidence,
                str(len(selected)),
                percent(sum(m.rank == 0 for m in res), len(res)),
                percent(sum(m.rank is not None and m.rank < 3 for m in res), len(res)),
                percent(sum(m.named for m in res), len(res)),
            ]
        )
    out += [
        text_table(
            "regbot by confidence",
            ("confidence", "seeds", "top-1", "top-3", "culprit named"),
            rows,
        ),
        "",
    ]
    beaten = Counter(r.methods["regbot"].top_role for r in results if r.methods["regbot"].rank != 0)
    out.append(
        "first-ranked commit when regbot's top-1 is wrong: "
        + (", ".join(f"{k} {v}" for k, v in beaten.most_common()) or "none")
    )
    build = [r.build_s for r in results]
    attribution = [r.attribution_s for r in results]
    parts = {k: statistics.mean(r.parts_s[k] for r in results) for k in results[0].parts_s}
    out.append(
        f"time per scenario: build {statistics.mean(build):.2f}s (max {max(build):.2f}s),"
        f" attribution {statistics.mean(attribution):.2f}s (max {max(attribution):.2f}s: "
        + ", ".join(f"{k} {v:.2f}s" for k, v in parts.items())
        + ")"
    )
    res = regbot_of(results)
    suggested = [m for m in res if m.suggested]
    top3 = sum(m.rank is not None and m.rank < 3 for m in suggested)
    share = len(suggested) / n if n else 0.0
    accuracy = top3 / len(suggested) if suggested else 0.0
    out.append(
        f"targets: top-3 where suggested {100 * accuracy:.1f}% (>= 95%: "
        f"{'met' if accuracy >= 0.95 else 'NOT met'}); suggestions {100 * share:.1f}% "
        f"(>= 60%: {'met' if share >= 0.6 else 'NOT met'})"
    )
    return "\n".join(out)


def seeded_misses(results: Sequence[SeedResult]) -> str:
    """One row per seed where regbot's first-ranked commit is not the culprit."""
    rows = [
        [
            str(r.seed),
            r.kind,
            "yes" if r.ambiguous else "no",
            m.confidence,
            "-" if m.rank is None else str(m.rank + 1),
            m.top_role,
            "yes" if m.named else "no",
        ]
        for r in results
        if (m := r.methods["regbot"]).rank != 0
    ]
    header = ("seed", "kind", "ambiguous", "confidence", "culprit rank", "ranked first", "named")
    return text_table("regbot's top-1 misses", header, rows)
