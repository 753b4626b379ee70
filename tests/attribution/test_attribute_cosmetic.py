"""Attribution of real edits (real git history, real sample store): a real change to a hot
function that comes with a docstring-only and a local-rename edit of it is the only one
credited, and named with confidence ``high``; import-time work is found through the module's
``<module>`` frame."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from git_repo import GitRepo
from sample_stores import index_of

from regbot.attribution.attribute import (
    AttributionSettings,
    RegressionEvidence,
    attribute,
    prepare_changes,
)
from regbot.attribution.changes import read_change_set

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
        after_s=600.0,
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


def test_import_time_work_is_attributed_through_the_module_frame(tmp_path: Path) -> None:
    """A commit that compiles more patterns at module level is named for the rise of the
    module's ``<module>`` frame; a commit that only adds a function to that module is not."""
    patterns = 'import re\n\nWORDS = [re.compile(r"\\w+")]\n\n\ndef first(text):\n    return text\n'
    repo = GitRepo(tmp_path / "repo")
    base = repo.commit("base", {"lib/patterns.py": patterns, "app.py": "import lib.patterns\n"})
    many = 'WORDS = [re.compile(r"\\w+" * k) for k in range(1, 60)]'
    repo.replace("lib/patterns.py", 'WORDS = [re.compile(r"\\w+")]', many)
    repo.commit("Patterns for every word length")
    second = "def second(text):\n    return text\n\n\ndef first(text):"
    repo.replace("lib/patterns.py", "def first(text):", second)
    repo.commit("Add second")
    grow, add = read_change_set(repo.path, base, "main")
    assert [(s.qualname, s.change) for s in grow.subroutines] == [("<module>", "modified")]
    assert [(s.qualname, s.change) for s in add.subroutines] == [("second", "added")]
    stack = "<module> (app.py:1);<module> (lib/patterns.py:3);compile (re/__init__.py:227)"
    root = "<module> (app.py:1)"
    before, after = f"{stack} 5\n{root} 95\n", f"{stack} 40\n{root} 60\n"
    index = index_of(tmp_path, before, after, after_s=600.0)
    changes = prepare_changes([grow, add], index)
    assert changes.modified == (("<module> (lib/patterns.py)",), ())
    module = "<module> (lib/patterns.py)"
    evidence = RegressionEvidence(
        "r-2", f"gcpu:{module}", "gcpu", module, 600.0, 0.0, 1200.0,
        np.array([0.0, 600.0]), np.array([0.05, 0.4]),
    )  # fmt: skip
    result = attribute(evidence, changes, index, (), AttributionSettings())
    assert result.ranked[0].commit.title == "Patterns for every word length"
    assert result.ranked[0].parts.gcpu_attribution == 1.0
    assert result.confidence == "high"


def test_the_caller_that_calls_more_often_is_the_answer(tmp_path: Path) -> None:
    """``tokens`` is unchanged but for a docstring; ``main`` now calls it three times per line.
    Its rise comes through ``main``, on every one of its stacks: with the docstring edit no
    modification of ``tokens``, the caller's commit is credited and named."""
    repo = GitRepo(tmp_path / "repo")
    base = repo.commit("base", {"lib/text.py": SOURCE})
    path = "lib/text.py"
    more = "    return [tokens(line * 3) for line in lines for _ in range(3)]"
    repo.replace(path, "    return [tokens(line) for line in lines]", more)
    repo.commit("main: tokenise every variant")
    repo.replace(path, '"""Split text into words."""', '"""Split text into words (tokens)."""')
    repo.commit("tokens: mention tokens in its docstring")
    calls, docs = read_change_set(repo.path, base, "main")
    assert [(s.qualname, s.change) for s in docs.subroutines] == [("tokens", "cosmetic")]
    frames = "main (lib/text.py:16);tokens (lib/text.py:9)"
    index = index_of(
        tmp_path,
        f"{frames} 10\nmain (lib/text.py:16) 90\n",
        f"{frames} 45\nmain (lib/text.py:16) 55\n",
        after_s=600.0,
    )
    changes = prepare_changes([calls, docs], index)
    evidence = RegressionEvidence(
        "r-3", "gcpu:tokens (lib/text.py)", "gcpu", "tokens (lib/text.py)", 600.0, 0.0, 1200.0,
        np.array([0.0, 600.0]), np.array([0.1, 0.45]),
    )  # fmt: skip
    result = attribute(evidence, changes, index, (), AttributionSettings())
    assert result.ranked[0].commit.title == "main: tokenise every variant"
    assert result.ranked[0].parts.gcpu_attribution == 1.0
    assert result.ranked[1].parts.gcpu_attribution == 0.0
    assert result.confidence == "high"


def test_a_caller_that_sped_up_takes_no_credit_for_its_callees_share(tmp_path: Path) -> None:
    """``main`` got faster in its own code; ``tokens`` (unchanged, called as often) costs the
    same, so its *share* rose. The only edited frame on its stacks is ``main``, but ``main``'s
    inclusive share fell: it moved no cost into ``tokens`` and is credited with nothing, so
    nothing is named with confidence ``high``."""
    repo = GitRepo(tmp_path / "repo")
    base = repo.commit("base", {"lib/text.py": SOURCE})
    path = "lib/text.py"
    repo.replace(
        path, "    return [tokens(line) for line in lines]", "    return list(map(tokens, lines))"
    )
    repo.commit("main: tokenise with map")
    commits = read_change_set(repo.path, base, "main")
    frames = "run (app.py:3);main (lib/text.py:16)"
    index = index_of(
        tmp_path,
        f"{frames};tokens (lib/text.py:9) 10\n{frames} 50\nrun (app.py:3);other (app.py:9) 40\n",
        f"{frames};tokens (lib/text.py:9) 10\n{frames} 20\nrun (app.py:3);other (app.py:9) 40\n",
        after_s=600.0,
    )
    changes = prepare_changes(list(commits), index)
    evidence = RegressionEvidence(
        "r-4", "gcpu:tokens (lib/text.py)", "gcpu", "tokens (lib/text.py)", 600.0, 0.0, 1200.0,
        np.array([0.0, 600.0]), np.array([0.1, 0.143]),
    )  # fmt: skip
    result = attribute(evidence, changes, index, (), AttributionSettings())
    assert result.ranked[0].commit.title == "main: tokenise with map"
    assert result.ranked[0].parts.gcpu_attribution == 0.0
    assert result.confidence != "high"
