"""Scoring one fleet's ``regbot detect`` report (``out.json``) against the fleet's truth:
true regressions found and their change-time error, false positives by decoy, creeps,
duplicates, group purity, what removed the missed ones, and the filters' view."""

from __future__ import annotations

from collections import defaultdict

from detect_fleet_tally import TOLERANCE_BUCKETS, Tally, decoy_type, multiple_of


def score_report(report: dict, truth, n_series: int, tally: Tally) -> None:
    """Add one fleet's report to ``tally`` (the rules of the module docstring)."""
    tol = TOLERANCE_BUCKETS * truth.bucket_s
    event_of = truth.event_of()
    regs, filtered = report["regressions"], report.get("filtered", [])
    by_id = {e["id"]: e for e in regs + filtered}
    on_series: dict[str, list[dict]] = defaultdict(list)
    for r in regs:
        on_series[r["series"]].append(r)
    tally.series += n_series
    tally.funnel.update(report["funnel"])
    hits: dict[str, list[dict]] = defaultdict(list)
    for r in regs:
        e = event_of.get(r["series"])
        if e is None:
            tally.fp["unknown"] += 1
        elif e.kind in ("step", "cascade"):
            if abs(r["change_time"] - e.change_time_s) <= tol:
                hits[e.group_id].append(r)
            else:
                tally.fp["mistimed"] += 1
        elif e.kind == "creep":
            if r["change_time"] >= e.change_time_s - tol:
                hits[e.group_id].append(r)
            else:
                tally.fp["mistimed"] += 1
        else:
            tally.fp[decoy_type(e.kind)] += 1
            if e.kind == "none" and truth.noise[r["series"]] != "normal":
                tally.quiet_non_normal += 1
    for e in truth.events:
        if e.kind == "creep":
            tally.n_creeps += 1
            if hits.get(e.group_id):
                tally.creeps[hits[e.group_id][0]["detector"]] += 1
        if e.kind not in ("step", "cascade"):
            continue
        m = multiple_of(e)
        tally.total[m] += 1
        tally.found[m] += bool(hits.get(e.group_id))
        tally.extra += max(len(hits.get(e.group_id, [])) - 1, 0)
        near = [r for sid in e.series_ids for r in on_series.get(sid, [])]
        if near:
            r = min(near, key=lambda r: abs(r["change_time"] - e.change_time_s))
            tally.errors.append((m, (r["change_time"] - e.change_time_s) / truth.bucket_s))
            interval = r.get("change_time_interval")
            if interval is not None:
                tally.covered.append(interval[0] <= e.change_time_s <= interval[1])
        if m >= 1.5 and not hits.get(e.group_id):
            tally.missed[why_missed(e, near, filtered, tol)] += 1
    for r in regs:
        group = event_of[r["series"]].group_id if r["series"] in event_of else None
        merged = group_members(r, by_id, filtered) - {r["series"]}
        tally.merged += len(merged)
        tally.merged_same += sum(
            event_of.get(s) is not None and event_of[s].group_id == group for s in merged
        )
    filter_removals(truth, filtered, on_series, tally)


def group_members(rep: dict, by_id: dict, filtered: list[dict]) -> set[str]:
    """The series of a representative's group, from its duplicates and the dedup verdicts."""
    members = {rep["series"]}
    members |= {by_id[d]["series"] for d in rep.get("duplicates", []) if d in by_id}
    for f in filtered:
        v = f["verdicts"]
        for stage, key in (
            ("som_dedup", "representative"),
            ("pairwise_dedup", "representative"),
            ("stack_dedup", "explained_by"),
        ):
            if stage in v and not v[stage]["passed"] and v[stage].get(key) == rep["series"]:
                members.add(f["series"])
    return members


def why_missed(event, near: list[dict], filtered: list[dict], tol: float) -> str:
    """What became of a true regression that was not found."""
    own = [
        f
        for f in filtered
        if f["series"] in event.series_ids and abs(f["change_time"] - event.change_time_s) <= tol
    ]
    for f in own:
        failed = [stage for stage, v in f["verdicts"].items() if not v["passed"]]
        if failed:
            return f"removed by {failed[0]}"
    if near:
        return "reported > 6 buckets away"
    if any(f["series"] in event.series_ids for f in filtered):
        return "candidate > 6 buckets away, filtered"
    return "no change point"


def filter_removals(truth, filtered: list[dict], on_series: dict, tally: Tally) -> None:
    """Issue item 3's view: true lasting steps >= 1.5x removed by went-away, seasonality or cost
    shift (on their origin series); transients and seasonal peaks reported."""
    removed_by: dict[str, set[str]] = defaultdict(set)
    for f in filtered:
        for stage, v in f["verdicts"].items():
            if not v["passed"]:
                removed_by[f["series"]].add(stage)
    for e in truth.events:
        origin = e.series_ids[0]
        if e.kind in ("step", "cascade") and e.size_in_mde >= 1.5:
            tally.filters["steps"] += 1
            stages = removed_by.get(origin, set()) & {"went_away", "seasonality", "cost_shift"}
            tally.filters["steps removed"] += bool(stages) and not on_series.get(origin)
        if e.kind in ("transient", "seasonal_peak"):
            tally.filters[e.kind] += 1
            tally.filters[f"{e.kind} reported"] += any(on_series.get(s) for s in e.series_ids)
