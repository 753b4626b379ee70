"""A deploy whose real change to a hot function comes with a docstring-only edit and a
local-rename edit of the same function (real git history, real sample store): only the change
that altered behaviour is credited, and it is named with confidence ``high``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from git_repo import GitRepo

from regbot.attribution.attribute import (
    AttributionSettings,
    RegressionEvidence,
    attribute,
    prepare_changes,
)
from regbot.attribution.changes import read_change_set
from regbot.profiles.folded import parse_folded
from regbot.profiles.model import ParseOptions
from regbot.profiles.sample_index import SampleIndex
from regbot.profiles.store import open_store

SOURCE = '''import re

WORD = re.compile(r"\\w+")


def tokens(text):
    """Split text into words."""
    found = []
    for match in WORD.finditer(text):
        found.append(match.group(0))
    return found


def main(lines):
    return [tokens(line) for line in lines]
'''


def index_of(tmp_path: Path, before: str, after: str) -> SampleIndex:
    store = open_store(tmp_path / "store")
    for text, at, key in ((before, 0, "before"), (after, 600, "after")):
        samples = parse_folded(
            text.encode(), source=key, table=store.table, at_s=at, options=ParseOptions()
        )
        store.add(samples, key)
    store.commit()
    return SampleIndex(store.table, store.records())


def test_only_the_behaviour_change_is_credited(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    base = repo.commit("base", {"lib/text.py": SOURCE})
    path = "lib/text.py"
    repo.replace(path, "found.append(match.group(0))", "found.append(match.group(0).casefold())")
    repo.commit("Casefold every word")
    repo.replace(path, '"""Split text into words."""', '"""Split ``text`` into words (tokens)."""')
    repo.commit("tokens: document what tokens returns")
    repo.replace(path, "found", "words")
    repo.commit("tokens: clearer names in tokens")
    commits = read_change_set(repo.path, base, "main")
    assert [sorted((s.qualname, s.change) for s in c.subroutines) for c in commits] == [
        [("tokens", "modified")],
        [("tokens", "cosmetic")],
        [("tokens", "cosmetic")],
    ]
    # every function of the changed file, for frame matching (a frame naming one is only it)
    assert commits[0].functions == (("lib/text.py", frozenset({"tokens", "main"})),)
    frames = "main (lib/text.py:16);tokens (lib/text.py:9)"
    index = index_of(
        tmp_path,
        f"{frames} 10\nmain (lib/text.py:16) 90\n",
        f"{frames} 20\nmain (lib/text.py:16) 80\n",
    )
    changes = prepare_changes(commits, index)
    assert changes.modified == (("tokens (lib/text.py)",), (), ())
    evidence = RegressionEvidence(
        "r-1", "gcpu:tokens (lib/text.py)", "gcpu", "tokens (lib/text.py)", 600.0, 0.0, 1200.0,
        np.array([0.0, 600.0]), np.array([0.1, 0.2]),
    )  # fmt: skip
    result = attribute(evidence, changes, index, (), AttributionSettings())
    top = result.ranked[0]
    assert top.commit.title == "Casefold every word"
    assert top.parts.gcpu_attribution == 1.0
    assert [r.parts.gcpu_attribution for r in result.ranked[1:]] == [0.0, 0.0]
    assert result.confidence == "high"
    assert [c.commit.title for c in result.candidates] == ["Casefold every word"]
