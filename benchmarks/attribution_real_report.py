"""The attribution benchmark's tables for ``--real``: per real-history scenario what the run
reported and named, the misses with their ranking parts, the summary against the targets,
the real histories beside the seeded generator; and the clean deploys' gate."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from attribution_real import CleanResult, Named, RealResult
from attribution_regbot_run import short_name
from attribution_seeded import SeedResult
from attribution_table import percent, text_table


def _mark(flags: Sequence[bool]) -> str:
    return "/".join("yes" if f else "no" for f in flags)


def _named_line(n: Named) -> str:
    culprit = "-" if n.culprit_rank is None else f"#{n.culprit_rank + 1}"
    star = "*" if n.regressed else ""
    return f"{star}{short_name(n.series)}={n.first}({n.confidence}, culprit {culprit})"


def real_report(results: Sequence[RealResult], seeded: Sequence[SeedResult]) -> str:
    rows = [
        [
            f"{r.library}/{r.name}",
            r.kind,
            ", ".join(f"{short_name(s)}: {f}" for s, f in r.fates.items()),
            _mark(r.culprits_high),
            _mark(r.culprits_first),
            ", ".join(r.decoys_high) or "-",
            r.gate,
            str(len(r.named)),
            f"{r.seconds:.0f}s",
        ]
        for r in results
    ]
    header = (
        "scenario",
        "kind",
        "regressed series",
        "culprit #1 high",
        "culprit #1",
        "decoys #1 high",
        "gate",
        "reported",
        "run",
    )
    out = [
        text_table("regbot run --dry-run on real histories (default settings)", header, rows),
        "",
    ]
    out.append(
        "what the reported regressions name first (series=role of the first candidate"
        " (confidence, the culprit's rank in its ranking)); * a regressed series or the"
        " regression it was merged into:"
    )
    for r in results:
        naming = [n for n in r.named if n.confidence != "none" or n.regressed]
        silent = len(r.named) - len(naming)
        out.append(
            f"  {r.library}/{r.name}: "
            + ("; ".join(_named_line(n) for n in naming) or "-")
            + (f"; and {silent} with no suggestion" if silent else "")
        )
    out.append("")
    misses = [r for r in results if not all(r.culprits_high)]
    if misses:
        out.append(
            "misses: per regression that names a commit or carries a regressed series (*), the"
            " first-ranked commit and the culprit, with their parts"
        )
        for r in misses:
            out.append(f"  {r.library}/{r.name} ({r.kind}):")
            for n in r.named:
                if not n.parts_first or (n.confidence == "none" and not n.regressed):
                    continue
                parts = ", ".join(f"{k} {v:.2f}" for k, v in n.parts_first.items())
                culprit = (
                    ", ".join(f"{k} {v:.2f}" for k, v in n.parts_culprit.items())
                    if n.parts_culprit
                    else "not ranked"
                )
                out.append(
                    f"    {'*' if n.regressed else ''}{short_name(n.series)} ({n.confidence},"
                    f" delta {n.delta:+.4f}): first"
                    f" {n.ranked_first} [{parts}]; culprit #"
                    f"{'-' if n.culprit_rank is None else n.culprit_rank + 1} [{culprit}]"
                )
        out.append("")
    such = [r for r in results if r.kind in ("slower", "caller_calls_more")]
    two = [r for r in results if r.kind == "two_culprits"]
    more = [r for r in results if r.kind == "caller_calls_more"]
    decoys_high = sum(len(r.decoys_high) for r in results)
    decoys_in = sum(len(r.decoys_in_high) for r in results)
    gate = sum(r.gate == "failure" for r in results)
    hits = sum(all(r.culprits_high) for r in such)
    rows = [
        [
            "culprit #1 with high (slower, caller_calls_more)",
            f"{hits}/{len(such)}",
            ">= 9/10",
            "met" if len(such) and hits >= 0.9 * len(such) else "NOT met",
        ],
        [
            "decoys named #1 with high",
            str(decoys_high),
            "0",
            "met" if decoys_high == 0 else "NOT met",
        ],
        [
            "  by kind",
            ", ".join(
                f"{k} {v}"
                for k, v in Counter(k for r in results for k in r.decoys_high).most_common()
            )
            or "-",
            "",
            "",
        ],
        ["decoys among candidates of high regressions", str(decoys_in), "-", ""],
        [
            "gate failed",
            f"{gate}/{len(results)}",
            f"{len(results)}/{len(results)}",
            "met" if gate == len(results) else "NOT met",
        ],
        [
            "two culprits: each #1 with high",
            ", ".join(
                f"{r.library} {_mark(r.culprits_high)}"
                + "".join(
                    f" (not {f})"
                    for f, h in zip(r.culprit_functions, r.culprits_high, strict=True)
                    if not h
                )
                for r in two
            )
            or "-",
            "yes/yes",
            "",
        ],
        [
            "caller calls more: caller's commit #1 with high",
            ", ".join(f"{r.library} {_mark(r.culprits_high)}" for r in more) or "-",
            "yes",
            "",
        ],
        [
            "docstring/rename decoys with gCPU credit 0",
            f"{sum(r.zero_gcpu_ok for r in results)}/{len(results)}",
            f"{len(results)}/{len(results)}",
            "",
        ],
    ]
    out += [text_table("summary (real histories)", ("", "result", "target", ""), rows), ""]
    n = len(such)
    first = sum(all(r.culprits_first) for r in such)
    top3 = sum(all(r.culprits_top3) for r in such)
    res = [s.methods["regbot"] for s in seeded]
    rows = [
        [
            "real histories, whole run (slower + caller_calls_more)",
            str(n),
            percent(first, n),
            percent(hits, n),
            percent(top3, n),
        ],
    ]
    if seeded:
        rows.append(
            [
                "seeded generator, attribution of the culprit's series",
                str(len(res)),
                percent(sum(m.rank == 0 for m in res), len(res)),
                percent(sum(m.rank == 0 and m.confidence == "high" for m in res), len(res)),
                percent(sum(m.rank is not None and m.rank < 3 for m in res), len(res)),
            ]
        )
    out.append(
        text_table(
            "beside the seeded generator",
            ("", "scenarios", "top-1", "top-1 high", "top-3"),
            rows,
        )
    )
    return "\n".join(out)


def clean_report(results: Sequence[CleanResult]) -> str:
    rows = [
        [f"{r.library}/{r.name}", r.gate, ", ".join(r.reported) or "-", f"{r.seconds:.0f}s"]
        for r in results
    ]
    passed = sum(r.gate == "success" for r in results)
    table = text_table(
        "clean deploys (the scenario's leading neutral commits; the release's recordings on"
        " both sides)",
        ("deploy", "gate", "reported", "run"),
        rows,
    )
    verdict = "met" if passed == len(results) else "NOT met"
    return f"{table}\ngate passed on {passed}/{len(results)} clean deploys (target: all): {verdict}"
