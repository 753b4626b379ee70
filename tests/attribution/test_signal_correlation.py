"""Time-series correlation with non-performance series, credited to commits that name them."""

from __future__ import annotations

import numpy as np
import pytest

from regbot.attribution.model import Commit
from regbot.attribution.signal_correlation import (
    Signal,
    correlation_parts,
    pearson,
    signal_names,
    signals_named_by,
)


def test_signal_names() -> None:
    assert signal_names("flag:new_parser") == ("flag:new_parser", "new_parser")
    assert signal_names(
        "rollout{flag=fast_json,region=eu}", {"flag": "fast_json", "region": "eu"}
    ) == (
        "rollout{flag=fast_json,region=eu}",
        "rollout",
        "fast_json",
    )


def test_commits_name_signals_as_whole_identifiers() -> None:
    signals = [Signal("flag:new_parser", signal_names("flag:new_parser"), np.zeros(0), np.zeros(0))]
    assert signals_named_by(Commit("a", "Enable NEW_PARSER for 10%"), signals) == [0]
    assert signals_named_by(Commit("b", "x", diff="+if flags.get('new_parser'):"), signals) == [0]
    assert signals_named_by(Commit("c", "Rename new_parser_v2 module"), signals) == []


def test_pearson_pairs_points_by_nearest_time() -> None:
    t = np.arange(100) * 60.0
    rng = np.random.default_rng(3)
    flag = (t >= 3000).astype(float)
    regression = 0.01 + 0.002 * flag + rng.normal(0, 0.0002, 100)
    r = pearson(t + 7.0, regression, t, flag)  # a different source's timestamps
    assert r > 0.9
    assert pearson(t, regression, t, np.ones(100)) == 0.0
    assert pearson(t[:2], regression[:2], t[:2], flag[:2]) == 0.0


def test_correlation_parts_credit_the_naming_commit() -> None:
    t = np.arange(200) * 60.0
    rng = np.random.default_rng(5)
    on = (t >= 6000).astype(float)
    regression = 1.0 + 0.3 * on + rng.normal(0, 0.05, 200)
    signals = [
        Signal("flag:fast_json", ("flag:fast_json", "fast_json"), t, on),
        Signal("flag:unrelated", ("flag:unrelated", "unrelated"), t, rng.normal(0, 1, 200)),
    ]
    commits = [
        Commit("a", "Roll out fast_json to all hosts"),
        Commit("b", "Tidy unrelated code"),
        Commit("c", "Docs"),
    ]
    parts = correlation_parts(t, regression, commits, signals, (0.0, t[-1]))
    assert parts[0] == pytest.approx(abs(np.corrcoef(regression, on)[0, 1]))
    assert parts[0] > 0.8
    assert parts[1] < 0.3
    assert parts[2] == 0.0
    assert correlation_parts(t, regression, commits, [], (0.0, t[-1])) == [None, None, None]
