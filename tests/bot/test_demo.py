"""`regbot demo` from a fresh folder: exit 0, the planted culprit named first, the PR comment and
the explain view shown, the planted false alarms kept out of the report."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from regbot.bot.cli import main


def test_demo_names_the_planted_culprit(tmp_path: Path) -> None:
    out = io.StringIO()
    err = io.StringIO()
    code = main(
        ["demo", "--dir", str(tmp_path / "demo")],
        out=Console(file=out, width=120),
        err=Console(file=err, width=120),
    )
    text = out.getvalue()
    assert code == 0, err.getvalue()
    assert "named #1 (high confidence)" in text
    assert "the comment regbot would post" in text
    assert "verdicts (pipeline order)" in text
    report = json.loads((tmp_path / "demo" / "report.json").read_text())
    assert report["regressions"]
    assert "planted false alarms filtered: " in text
    filtered_line = next(line for line in text.splitlines() if "false alarms filtered" in line)
    kept, planted = filtered_line.rsplit(": ", 1)[1].split(" of ")
    assert kept == planted


def test_demo_refuses_a_folder_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "keep.txt").write_text("mine")
    err = io.StringIO()
    code = main(
        ["demo", "--dir", str(tmp_path / "demo")],
        out=Console(file=io.StringIO()),
        err=Console(file=err),
    )
    assert code == 2
    assert (tmp_path / "demo" / "keep.txt").read_text() == "mine"
