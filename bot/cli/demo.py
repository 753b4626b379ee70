"""`regbot demo`: the whole post-deploy job on a self-contained scenario, offline.

It builds a scenario (``regbot/datasets/service.py``: a real git repository of a generated Python service with
a few dozen commits over three deploys, py-spy-shaped profiles and metrics with one planted
regression and several planted false alarms), runs ``regbot run --dry-run`` for the last deploy,
and shows the report, the PR comment regbot would post on the suspect's pull request, and the
``regbot explain`` view of the planted regression. The scenario stays on disk, so its commands can
be run again by hand (they are printed at the end).
"""

from __future__ import annotations

import argparse
import json
import shlex
import tempfile
from pathlib import Path
from typing import Final

from rich.console import Console
from rich.markdown import Markdown
from rich.panel import Panel
from rich.rule import Rule

from regbot.bot.cli.exit_codes import EXIT_OK
from regbot.bot.explanation.build import build_explanation
from regbot.bot.explanation.model import Explanation
from regbot.bot.github.comment import comment_marker, render_comment
from regbot.bot.github.publish import stack_path_of
from regbot.bot.state import open_state_read_only
from regbot.bot.views.explain import explain_renderables
from regbot.datasets.service import Scenario, build_scenario
from regbot.report.decode import read_report
from regbot.report.model import RegressionEntry, Report

DEMO_KIND: Final = "slower"


def _describe(scenario: Scenario) -> str:
    deploys = ", ".join(sha[:10] for sha, _ in scenario.deploys)
    return (
        f"scenario (seed {scenario.seed}) in {scenario.root}\n"
        f"  repository {scenario.repo_path} — deploys {deploys}\n"
        f"  profiles   {scenario.profiles_dir} (py-spy folded, one file per bucket)\n"
        f"  metrics    {scenario.series_dir}\n"
        f"  planted    a slower {scenario.culprit_function.removeprefix('gcpu:')} in commit "
        f"{scenario.culprit_sha[:10]}; false alarms: {', '.join(scenario.planted_false_alarms)}"
    )


def _regression_of(report: Report, scenario: Scenario) -> RegressionEntry | None:
    """The reported regression on the culprit's series that names it, else any that names it,
    else the one on its series."""
    naming = [
        e for e in report.regressions if any(c.commit == scenario.culprit_sha for c in e.candidates)
    ]
    on_series = [e for e in report.regressions if e.series == scenario.culprit_function]
    return next(iter([e for e in on_series if e in naming] + naming + on_series), None)


def _comment(entry: RegressionEntry, scenario: Scenario, explanation: Explanation) -> str | None:
    pulls = [c.pull_request for c in entry.candidates if c.pull_request]
    if not pulls:
        return None
    series = explanation.regression_series or explanation.series
    points = (
        list(zip(series.times_s.tolist(), series.values.tolist(), strict=True)) if series else []
    )
    return render_comment(
        entry,
        pull_request=pulls[0],
        marker=comment_marker(entry.group, pulls[0]),
        series_points=points,
        stack_path=stack_path_of(entry),
        explain_command=f"regbot explain {entry.id}",
    )


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from regbot.bot.cli import main

    directory = args.dir or Path(tempfile.mkdtemp(prefix="regbot-demo-"))
    out.print(Rule("regbot demo: building the scenario"))
    scenario = build_scenario(directory, args.seed, kind=DEMO_KIND, same_function=False)
    out.print(_describe(scenario), highlight=False, markup=False)

    report_path = scenario.root / "report.json"
    arguments = scenario.run_arguments(report_path)
    out.print(Rule("regbot run (post-deploy job, --dry-run)"))
    out.print("$ regbot " + shlex.join(arguments), highlight=False, markup=False)
    code = main(arguments, out=out, err=err)
    if code != 0:
        return code
    report = read_report(json.loads(report_path.read_text()), str(report_path))

    entry = _regression_of(report, scenario)
    if entry is None:
        err.print("regbot demo: the planted regression was not reported", highlight=False)
        return EXIT_OK
    with open_state_read_only(scenario.state_path) as state:
        explanation = build_explanation(
            entry.id,
            entry.id,
            state.reports(),
            state.regression,
            state.groups(),
            frozenset({"throughput", "qps"}),
        )
    body = _comment(entry, scenario, explanation)
    if body is not None:
        out.print(Rule("the comment regbot would post on the suspect's pull request"))
        out.print(Panel(Markdown(body), title="PR comment (rendered)"))
    out.print(Rule(f"regbot explain {entry.id}"))
    for renderable in explain_renderables(explanation):
        out.print(renderable)

    named = [c.commit for c in entry.candidates]
    verdict = (
        f"planted culprit {scenario.culprit_sha[:10]} named #{named.index(scenario.culprit_sha) + 1}"
        f" ({entry.confidence} confidence)"
        if scenario.culprit_sha in named
        else f"planted culprit {scenario.culprit_sha[:10]} not named"
    )
    reported = {e.series for e in report.regressions}
    alarms = [a for a in scenario.planted_false_alarms if a not in reported]
    out.print(Rule("result"))
    out.print(verdict, highlight=False, markup=False)
    out.print(
        f"planted false alarms filtered: {len(alarms)} of {len(scenario.planted_false_alarms)}",
        highlight=False,
    )
    out.print(
        f"try: regbot explain {entry.id} --state {scenario.state_path}",
        highlight=False,
        markup=False,
    )
    return EXIT_OK
