"""The attribution benchmark's ``--real`` mode, per scenario: the whole `regbot run --dry-run`
on the real histories of ``tests/fixtures/real_history`` (``tests/support/real_history.py``),
and what it named — culprits and decoys first with ``high``, the gate, where the regressed
series went (``run_real``); and the clean deploys of neutral commits only (``run_clean``)."""

from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from attribution_regbot_run import representative_of, run_quietly, series_fate, short_name

SUPPORT = Path(__file__).resolve().parents[1] / "tests" / "support"
REAL_DECOYS = ("docstring_only", "local_rename", "speed_up", "caller_edit", "names_function")


def load_real_history():
    """tests/support/real_history.py (not part of the installed package)."""
    if str(SUPPORT) not in sys.path:
        sys.path.insert(0, str(SUPPORT))
    import real_history

    return real_history


@dataclass(frozen=True)
class Named:
    """What one reported regression names: its series, confidence, the role of its first
    candidate (culprit, a decoy kind, filler; "-" without candidates) and of the ranking's first
    commit, and the culprit's place in its ranking (None: not ranked)."""

    series: str
    confidence: str
    first: str
    first_title: str
    ranked_first: str
    culprit_rank: int | None
    parts_first: dict[str, float]
    parts_culprit: dict[str, float] | None
    delta: float
    regressed: bool  # a regressed series, or the regression one was merged into


@dataclass(frozen=True)
class RealResult:
    library: str
    name: str
    kind: str
    culprit_functions: tuple[str, ...]  # per culprit: the function its edit changed
    culprits_high: tuple[bool, ...]  # per culprit: first candidate of a high regression
    culprits_first: tuple[bool, ...]  # per culprit: first candidate of any reported regression
    culprits_top3: tuple[bool, ...]  # per culprit: in the first 3 of some reported ranking
    decoys_high: tuple[str, ...]  # decoy kinds named first by a high regression
    decoys_in_high: tuple[str, ...]  # decoy kinds among the candidates of a high regression
    gate: str
    fates: dict[str, str]
    named: tuple[Named, ...]
    zero_gcpu_ok: bool  # docstring_only / local_rename decoys got gcpu_attribution 0 everywhere
    seconds: float


def scenario_spec(real_history, library: str, name: str) -> dict:
    return next(s for s in real_history.fixture(library)["scenarios"] if s["name"] == name)


def _role(scenario, sha: str) -> str:
    role = scenario.role(sha)
    return "culprit" if role == "culprit" else role


@dataclass(frozen=True)
class CleanResult:
    """A clean deploy (only neutral commits, the release's recordings on both sides): the
    gate's state and what was reported anyway."""

    library: str
    name: str
    gate: str
    reported: tuple[str, ...]
    seconds: float


def run_clean(library: str, name: str, seed: int = 0) -> CleanResult:
    real_history = load_real_history()
    with tempfile.TemporaryDirectory(prefix=f"regbot-clean-{library}-{name}-") as folder:
        scenario = real_history.build_real_scenario(
            library, name, Path(folder) / "s", seed, clean=True
        )
        report, seconds = run_quietly(
            scenario.run_arguments, Path(folder), f"{library}/{name} (clean)"
        )
    return CleanResult(
        library,
        name,
        str(report["gate"]["state"]),
        tuple(short_name(r["series"]) for r in report["regressions"]),
        seconds,
    )


def run_real(library: str, name: str, seed: int = 0) -> RealResult:
    real_history = load_real_history()
    with tempfile.TemporaryDirectory(prefix=f"regbot-real-{library}-{name}-") as folder:
        scenario = real_history.build_real_scenario(library, name, Path(folder) / "s", seed)
        report, seconds = run_quietly(scenario.run_arguments, Path(folder), f"{library}/{name}")
    regressions = report["regressions"]
    high = [r for r in regressions if r["confidence"] == "high"]

    def first(r: dict) -> str:
        return r["candidates"][0]["commit"] if r["candidates"] else ""

    culprits = scenario.culprits
    carriers = set(scenario.series) | {
        rep for series in scenario.series if (rep := representative_of(report, series))
    }
    named = []
    for r in regressions:
        ranking = [c["commit"] for c in r.get("ranking", r["candidates"])]
        rank = next((i for i, sha in enumerate(ranking) if sha in culprits), None)
        top = r["candidates"][0] if r["candidates"] else None
        culprit_entry = r["ranking"][rank] if rank is not None else None
        named.append(
            Named(
                series=r["series"],
                confidence=r["confidence"],
                first=_role(scenario, top["commit"]) if top else "-",
                first_title=top["title"] if top else "",
                ranked_first=_role(scenario, ranking[0]) if ranking else "-",
                culprit_rank=rank,
                parts_first=dict(r["ranking"][0]["parts"]) if r.get("ranking") else {},
                parts_culprit=dict(culprit_entry["parts"]) if culprit_entry else None,
                delta=float(r["delta"]),
                regressed=r["series"] in carriers,
            )
        )
    cosmetic = {
        scenario.decoys[k] for k in ("docstring_only", "local_rename") if k in scenario.decoys
    }
    zero_ok = all(
        c["parts"]["gcpu_attribution"] == 0
        for r in regressions
        for c in r.get("ranking", []) + r["candidates"]
        if c["commit"] in cosmetic
    )
    decoy_of = {sha: kind for kind, sha in scenario.decoys.items()}
    return RealResult(
        library=library,
        name=name,
        kind=scenario.kind,
        culprit_functions=tuple(
            short_name(scenario.touches[c][0]) if scenario.touches.get(c) else "?" for c in culprits
        ),
        culprits_high=tuple(any(first(r) == c for r in high) for c in culprits),
        culprits_first=tuple(any(first(r) == c for r in regressions) for c in culprits),
        culprits_top3=tuple(
            any(c in [x["commit"] for x in r.get("ranking", [])[:3]] for r in regressions)
            for c in culprits
        ),
        decoys_high=tuple(sorted({decoy_of[first(r)] for r in high if first(r) in decoy_of})),
        decoys_in_high=tuple(
            sorted(
                {
                    decoy_of[c["commit"]]
                    for r in high
                    for c in r["candidates"]
                    if c["commit"] in decoy_of
                }
            )
        ),
        gate=str(report["gate"]["state"]),
        fates={s: series_fate(report, s) for s in scenario.series},
        named=tuple(named),
        zero_gcpu_ok=zero_ok,
        seconds=seconds,
    )
